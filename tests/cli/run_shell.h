// Runs a shell command for the CLI tests: exit code and stdout + stderr together.
#pragma once
#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace qinfer::test {

struct ShellRun {
  int code;         // the exit status; 128 when killed by a signal, -1 when it could not start
  std::string out;  // stdout + stderr
};

inline ShellRun run_shell(const std::string& cmd) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  ShellRun r{-1, ""};
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int st = pclose(p);
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return r;
}

}  // namespace qinfer::test
