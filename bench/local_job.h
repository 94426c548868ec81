// What the xccl benchmarks that start their own ranks share: N local rank processes of one
// job (forked first, then given the unique id, whose root is a thread, down a pipe: a
// child forked while another thread holds a lock would inherit it held), and sizes and
// collective names read as xccl-perf reads them.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <xccl/xccl.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ccl/schedules.h"

namespace bench {

// "64K", "16M", "1G", "4096": bytes; nullopt if it is not a size.
inline std::optional<size_t> parse_size(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end;
  double mult = unit.empty() ? 1 : unit == "K" ? 1 << 10 : unit == "M" ? 1 << 20 : unit == "G" ? double(1 << 30) : -1;
  if (end == s.c_str() || mult < 0 || v <= 0) return std::nullopt;
  return size_t(v * mult);
}

inline std::optional<xm::ccl::Collective> parse_collective(const std::string& s) {
  using xm::ccl::Collective;
  if (s == "all_reduce") return Collective::kAllReduce;
  if (s == "all_gather") return Collective::kAllGather;
  if (s == "reduce_scatter") return Collective::kReduceScatter;
  if (s == "alltoall") return Collective::kAllToAll;
  return std::nullopt;
}

// The median of some figures (the mean of the middle two for an even count).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t h = v.size() / 2;
  return v.size() % 2 ? v[h] : (v[h - 1] + v[h]) / 2;
}

// Runs body(ids, rank) in `ranks` processes, `comms` unique ids shared by all (one per
// communicator each rank will make); returns how many ranks failed (exit status != 0).
// `before_start`, if given, sees the ids once they exist and before the ranks get them.
inline int run_local_job(int ranks, int comms, const std::function<int(const std::vector<xcclUniqueId>&, int)>& body,
                         const std::function<void(const std::vector<xcclUniqueId>&)>& before_start = {}) {
  std::vector<int> pipes;
  std::vector<pid_t> pids;
  for (int r = 0; r < ranks; ++r) {
    int fds[2];
    if (::pipe(fds) != 0) return ranks;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      std::vector<xcclUniqueId> ids(static_cast<size_t>(comms));
      for (xcclUniqueId& id : ids)
        if (::read(fds[0], &id, sizeof id) != ssize_t(sizeof id)) ::_exit(3);
      int rc = body(ids, r);
      std::fflush(stdout);
      ::_exit(rc);
    }
    ::close(fds[0]);
    pipes.push_back(fds[1]);
    pids.push_back(pid);
  }
  std::vector<xcclUniqueId> ids(static_cast<size_t>(comms));
  bool ok = true;
  for (xcclUniqueId& id : ids) ok = ok && xcclGetUniqueId(&id) == xcclSuccess;
  if (!ok) std::fprintf(stderr, "cannot start the bootstrap: %s\n", xcclGetLastError());
  if (ok && before_start) before_start(ids);
  for (int fd : pipes) {
    for (const xcclUniqueId& id : ids)
      if (ok) (void)!::write(fd, &id, sizeof id);
    ::close(fd);  // without ids the ranks exit
  }
  int failed = 0;
  for (pid_t p : pids) {
    int status = 0;
    ::waitpid(p, &status, 0);
    failed += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  return failed;
}

}  // namespace bench
