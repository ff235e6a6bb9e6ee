#include "util/system_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <vector>

namespace qinfer {

namespace {

std::optional<uint64_t> to_u64(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return std::nullopt;
  size_t e = s.find_last_not_of(" \t\r\n");
  const std::string t = s.substr(b, e - b + 1);
  if (t.empty() || t.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  errno = 0;
  const unsigned long long v = std::strtoull(t.c_str(), nullptr, 10);
  if (errno == ERANGE) return std::nullopt;
  return static_cast<uint64_t>(v);
}

std::optional<std::string> read_text(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// "Key:   123 kB" lines of /proc/meminfo.
std::optional<uint64_t> meminfo_field(const std::string& meminfo, const std::string& key) {
  std::istringstream in(meminfo);
  std::string line;
  while (std::getline(in, line)) {
    if (line.compare(0, key.size() + 1, key + ":") != 0) continue;
    std::istringstream v(line.substr(key.size() + 1));
    std::string num, unit;
    v >> num >> unit;
    const auto n = to_u64(num);
    if (!n) return std::nullopt;
    if (unit.empty()) return *n;
    if (unit == "kB") return *n * 1024;
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace

std::optional<uint64_t> parse_meminfo_available(const std::string& meminfo) {
  return meminfo_field(meminfo, "MemAvailable");
}

std::optional<uint64_t> parse_cgroup_limit(const std::string& text) {
  size_t b = text.find_first_not_of(" \t\r\n");
  if (b != std::string::npos && text.compare(b, 3, "max") == 0) return std::nullopt;
  const auto v = to_u64(text);
  if (!v || *v >= (uint64_t{1} << 62)) return std::nullopt;   // v1 "unlimited" is 2^63 - page
  return v;
}

std::optional<uint64_t> parse_cgroup_bytes(const std::string& text) { return to_u64(text); }

uint64_t parse_memory_stat(const std::string& stat, const std::string& key) {
  std::istringstream in(stat);
  std::string k, v;
  while (in >> k >> v)
    if (k == key) return to_u64(v).value_or(0);
  return 0;
}

std::optional<std::string> parse_proc_cgroup(const std::string& text, bool v2) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string id = line.substr(0, a), ctrl = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (v2) {
      if (id == "0" && ctrl.empty()) return path;
      continue;
    }
    std::istringstream cs(ctrl);
    std::string c;
    while (std::getline(cs, c, ','))
      if (c == "memory") return path;
  }
  return std::nullopt;
}

std::optional<uint64_t> SystemMemory::usable() const {
  if (available && cgroup_limit) return std::min(*available, cgroup_free);
  if (available) return available;
  if (cgroup_limit) return cgroup_free;
  return std::nullopt;
}

SystemMemory read_system_memory() {
  SystemMemory m;
  if (const auto mi = read_text("/proc/meminfo")) {
    m.total = meminfo_field(*mi, "MemTotal").value_or(0);
    m.available = parse_meminfo_available(*mi);
  }
  const std::string proc = read_text("/proc/self/cgroup").value_or("");
  // Candidate folders: the process's own cgroup under the mount (when the
  // mount shows the host's tree) and the mount root (inside a cgroup namespace).
  struct Kind {
    bool v2;
    std::string mount, limit, usage, inactive;
  };
  const Kind kinds[] = {{true, "/sys/fs/cgroup", "memory.max", "memory.current", "inactive_file"},
                        {false, "/sys/fs/cgroup/memory", "memory.limit_in_bytes", "memory.usage_in_bytes",
                         "total_inactive_file"}};
  for (const Kind& k : kinds) {
    std::vector<std::string> dirs;
    if (const auto p = parse_proc_cgroup(proc, k.v2); p && *p != "/") dirs.push_back(k.mount + *p);
    dirs.push_back(k.mount);
    for (const std::string& d : dirs) {
      const auto text = read_text(d + "/" + k.limit);
      if (!text) continue;
      const auto limit = parse_cgroup_limit(*text);
      if (!limit) break;   // this hierarchy has the file and no limit
      const uint64_t usage = parse_cgroup_bytes(read_text(d + "/" + k.usage).value_or("")).value_or(0);
      const uint64_t inactive = parse_memory_stat(read_text(d + "/memory.stat").value_or(""), k.inactive);
      const uint64_t used = usage > inactive ? usage - inactive : 0;
      const uint64_t free = *limit > used ? *limit - used : 0;
      if (!m.cgroup_limit || free < m.cgroup_free) {
        m.cgroup_limit = limit;
        m.cgroup_free = free;
        m.cgroup_file = d + "/" + k.limit;
      }
      break;
    }
  }
  return m;
}

}  // namespace qinfer
