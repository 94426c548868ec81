// Runs a function as N rank processes of one xccl job: the test process hosts the
// bootstrap root (xcclGetUniqueId) and forks the ranks, which join with
// xcclCommInitRank. A rank reports failure through its exit status and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>
#include <xccl/xccl.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace xm::ccl::test {

struct RankResult {
  int exit_code = -1;  // -1: killed or still running at the deadline
};

// Forks `ranks` processes running body(comm, rank) -> exit code; kills them all after
// `limit`. Children leave with _exit so the parent's static state is never destroyed twice.
inline std::vector<RankResult> run_ranks(int ranks, const std::function<int(xcclComm_t, int)>& body,
                                         std::chrono::seconds limit = std::chrono::seconds(120),
                                         const std::function<void(int)>& before_init = {}) {
  // Fork first, then start the bootstrap root (a thread) and hand its id down a pipe: a
  // child forked while another thread holds an allocator lock would inherit the lock
  // held and deadlock (sanitizer allocators do).
  std::vector<pid_t> pids;
  std::vector<int> pipes;
  for (int r = 0; r < ranks; ++r) {
    int fds[2];
    if (pipe(fds) != 0) return {};
    pid_t pid = fork();
    if (pid == 0) {
      close(fds[1]);
      xcclUniqueId id{};
      size_t got = 0;
      while (got < sizeof id) {
        ssize_t n = read(fds[0], reinterpret_cast<char*>(&id) + got, sizeof id - got);
        if (n <= 0) _exit(92);
        got += size_t(n);
      }
      close(fds[0]);
      if (before_init) before_init(r);
      xcclComm_t comm = nullptr;
      if (xcclCommInitRank(&comm, ranks, id, r) != xcclSuccess) {
        std::fprintf(stderr, "rank %d: init failed: %s\n", r, xcclGetLastError());
        _exit(90);
      }
      int rc = body(comm, r);
      if (rc == 0 && xcclCommDestroy(comm) != xcclSuccess) rc = 91;
      std::fflush(stdout);
      std::fflush(stderr);
      _exit(rc);
    }
    close(fds[0]);
    pids.push_back(pid);
    pipes.push_back(fds[1]);
  }
  xcclUniqueId id{};
  bool have_id = xcclGetUniqueId(&id) == xcclSuccess;
  for (int fd : pipes) {
    if (have_id) (void)!write(fd, &id, sizeof id);
    close(fd);  // without an id the children exit (92)
  }
  std::vector<RankResult> out(ranks);
  auto deadline = std::chrono::steady_clock::now() + limit;
  size_t left = pids.size();
  while (left > 0) {
    for (int r = 0; r < ranks; ++r) {
      if (pids[r] < 0) continue;
      int status = 0;
      pid_t got = waitpid(pids[r], &status, WNOHANG);
      if (got == pids[r]) {
        out[r].exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
        pids[r] = -1;
        --left;
      }
    }
    if (left > 0 && std::chrono::steady_clock::now() > deadline) {
      for (pid_t p : pids)
        if (p > 0) kill(p, SIGKILL), waitpid(p, nullptr, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return out;
}

}  // namespace xm::ccl::test
