// The /proc/meminfo and cgroup parsers on sample text (the formats of Linux 5-6,
// cgroup v1 and v2), and read_system_memory on this machine.
#include <gtest/gtest.h>

#include "util/system_memory.h"

namespace qinfer {
namespace {

TEST(SystemMemory, MeminfoAvailable) {
  const std::string sample =
      "MemTotal:       24683664 kB\n"
      "MemFree:        20655284 kB\n"
      "MemAvailable:   23031368 kB\n"
      "Buffers:           16800 kB\n";
  ASSERT_TRUE(parse_meminfo_available(sample).has_value());
  EXPECT_EQ(*parse_meminfo_available(sample), uint64_t{23031368} * 1024);
  EXPECT_FALSE(parse_meminfo_available("MemTotal: 100 kB\nMemFree: 50 kB\n").has_value());  // pre-3.14 kernels
  EXPECT_FALSE(parse_meminfo_available("MemAvailable: lots kB\n").has_value());
  EXPECT_FALSE(parse_meminfo_available("MemAvailable: 12 MB\n").has_value());
  EXPECT_FALSE(parse_meminfo_available("").has_value());
  // A key that only starts like it is not it.
  EXPECT_FALSE(parse_meminfo_available("MemAvailableX: 5 kB\n").has_value());
}

TEST(SystemMemory, CgroupLimit) {
  EXPECT_FALSE(parse_cgroup_limit("max\n").has_value());                     // v2 unlimited
  EXPECT_FALSE(parse_cgroup_limit("9223372036854771712\n").has_value());     // v1 unlimited (2^63 - 4096)
  ASSERT_TRUE(parse_cgroup_limit("8589934592\n").has_value());
  EXPECT_EQ(*parse_cgroup_limit("8589934592\n"), uint64_t{8} << 30);
  EXPECT_EQ(*parse_cgroup_limit("  1048576  "), uint64_t{1} << 20);
  EXPECT_FALSE(parse_cgroup_limit("-1\n").has_value());
  EXPECT_FALSE(parse_cgroup_limit("").has_value());
  EXPECT_FALSE(parse_cgroup_limit("12 34").has_value());
  EXPECT_EQ(*parse_cgroup_bytes("3282980864\n"), uint64_t{3282980864});
  EXPECT_FALSE(parse_cgroup_bytes("x").has_value());
}

TEST(SystemMemory, MemoryStat) {
  const std::string v2 = "anon 1000\nfile 5000\nactive_file 3000\ninactive_file 2000\n";
  EXPECT_EQ(parse_memory_stat(v2, "inactive_file"), 2000u);
  const std::string v1 = "cache 5000\nrss 10\ninactive_file 7\ntotal_inactive_file 4096\n";
  EXPECT_EQ(parse_memory_stat(v1, "total_inactive_file"), 4096u);
  EXPECT_EQ(parse_memory_stat(v1, "inactive_file"), 7u);   // whole keys only
  EXPECT_EQ(parse_memory_stat(v1, "nope"), 0u);
}

TEST(SystemMemory, ProcCgroup) {
  const std::string hybrid =
      "12:memory:/user.slice/job\n"
      "4:cpu,cpuacct:/user.slice\n"
      "0::/user.slice/user-1000.slice/session-2.scope\n";
  EXPECT_EQ(parse_proc_cgroup(hybrid, true).value_or("?"), "/user.slice/user-1000.slice/session-2.scope");
  EXPECT_EQ(parse_proc_cgroup(hybrid, false).value_or("?"), "/user.slice/job");
  EXPECT_EQ(parse_proc_cgroup("5:cpuset,memory:/a\n", false).value_or("?"), "/a");
  EXPECT_FALSE(parse_proc_cgroup("4:cpu:/x\n", false).has_value());
  EXPECT_FALSE(parse_proc_cgroup("12:memory:/x\n", true).has_value());
  EXPECT_FALSE(parse_proc_cgroup("garbage\n", true).has_value());
}

TEST(SystemMemory, UsableIsTheTighterOfTheTwo) {
  SystemMemory m;
  EXPECT_FALSE(m.usable().has_value());
  m.available = 10;
  EXPECT_EQ(*m.usable(), 10u);
  m.cgroup_limit = 100;
  m.cgroup_free = 4;
  EXPECT_EQ(*m.usable(), 4u);
  m.available.reset();
  EXPECT_EQ(*m.usable(), 4u);
}

TEST(SystemMemory, ThisMachine) {
  const SystemMemory m = read_system_memory();
  ASSERT_TRUE(m.usable().has_value()) << "neither /proc/meminfo's MemAvailable nor a cgroup limit was readable";
  EXPECT_GT(*m.usable(), 0u);
  if (m.available) {
    EXPECT_LE(*m.available, m.total);
  }
}

}  // namespace
}  // namespace qinfer
