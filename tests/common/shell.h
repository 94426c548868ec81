// Running commands as a user would, for tests of whole programs: a shell command's exit
// code and output.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace shell {

struct Outcome {
  int exit_code;
  std::string out;  // stdout, and stderr too when merged
};

// Runs `cmd` with /bin/sh; stderr joins stdout when `merge`.
inline Outcome run(const std::string& cmd, bool merge = true) {
  FILE* pipe = popen((cmd + (merge ? " 2>&1" : "")).c_str(), "r");
  if (!pipe) return {-1, "popen failed"};
  std::string out;
  std::array<char, 4096> buf;
  while (size_t n = fread(buf.data(), 1, buf.size(), pipe)) out.append(buf.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace shell
