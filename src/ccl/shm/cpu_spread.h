// Ranks of a host that the scheduler left on one CPU spread themselves out.
//
// Two ranks on two idle CPUs can stay on the same one for tens of milliseconds and more:
// every hand-off between them then waits for a context switch, and a collective runs 5-7x
// slower for as long as it lasts (measured here: in 4 of 15 launches of two ranks, both ran
// on one CPU for most or all of 300 all-gathers, 89 us each instead of 13). The scheduler
// does not see the need: each rank that waits gives the CPU to the other. So each rank
// publishes the CPU it waits on (in its shared-memory segment), and a rank that waits on a
// CPU holding more of the host's ranks than another CPU it may run on holds plus one —
// and is the highest-numbered of them there, so that only one moves — moves itself to the
// least-loaded one: it narrows its affinity to that CPU (the kernel migrates it at once)
// and restores its own mask straight after, so nothing stays pinned. It moves only when
// the crowding has lasted 1 ms (a peer's word is as old as its last wait), and at most
// once every 5 ms (so a move made on a word gone stale is undone soon).
#pragma once

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <vector>

#include "ccl/executor.h"

namespace xm::ccl {

class CpuSpread final : public WaitObserver {
 public:
  // `cpus`: the words where each local rank publishes its CPU, in local-rank order;
  // `self`: this rank's index among them. The CPUs this rank may run on are its
  // affinity now.
  CpuSpread(std::vector<std::atomic<int32_t>*> cpus, int self, int rank);
  // A rank that waits for its peers calls this: publishes its CPU, and moves if it should.
  void waiting() override;
  int moves() const { return moves_; }

 private:
  std::vector<std::atomic<int32_t>*> cpus_;
  int self_, rank_;
  cpu_set_t allowed_;
  std::vector<int> allowed_list_;
  std::vector<int> load_;  // by CPU number, scratch
  static constexpr std::chrono::milliseconds kSettle{1}, kBetweenMoves{5};
  std::chrono::steady_clock::time_point crowded_since_{}, next_move_{};
  int moves_ = 0;
};

}  // namespace xm::ccl
