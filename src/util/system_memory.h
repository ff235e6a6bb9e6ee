// How much memory this process may use: MemAvailable from /proc/meminfo and the
// limit of its memory cgroup (v2 memory.max, v1 memory.limit_in_bytes), less what
// the cgroup already uses (its reclaimable page cache counted as free). The
// parsers take the files' text so tests can feed them samples.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace qinfer {

// The "MemAvailable:" line of /proc/meminfo in bytes; nullopt when absent or malformed.
std::optional<uint64_t> parse_meminfo_available(const std::string& meminfo);
// A cgroup limit file (v2 memory.max or v1 memory.limit_in_bytes): nullopt for
// "max", for v1's "no limit" (any value >= 2^62) and for malformed text.
std::optional<uint64_t> parse_cgroup_limit(const std::string& text);
// A plain byte count (memory.current, memory.usage_in_bytes); nullopt when malformed.
std::optional<uint64_t> parse_cgroup_bytes(const std::string& text);
// The value of `key` (e.g. "inactive_file", v1 "total_inactive_file") in a memory.stat file; 0 when absent.
uint64_t parse_memory_stat(const std::string& stat, const std::string& key);
// The cgroup path of this process from /proc/self/cgroup's text: the v2 line
// "0::PATH" when v2 is true, else the v1 line whose controllers include "memory".
std::optional<std::string> parse_proc_cgroup(const std::string& text, bool v2);

struct SystemMemory {
  uint64_t total = 0;                   // MemTotal
  std::optional<uint64_t> available;    // MemAvailable
  std::optional<uint64_t> cgroup_limit; // the tightest memory cgroup limit found
  uint64_t cgroup_free = 0;             // limit - usage + reclaimable file pages (when limited)
  std::string cgroup_file;              // the limit file read (for the plan line)
  // What a new allocation can get: min(MemAvailable, cgroup_free); nullopt when neither is known.
  std::optional<uint64_t> usable() const;
};

// Reads /proc/meminfo, /proc/self/cgroup and the cgroup files under /sys/fs/cgroup.
SystemMemory read_system_memory();

}  // namespace qinfer
