// CpuSpread: a rank that shares its CPU with another of the host's ranks while a CPU it
// may run on has none moves there, once the crowding has lasted, and keeps its own
// affinity mask; the lower-numbered rank, and ranks already spread, stay.
#include "ccl/shm/cpu_spread.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace xm::ccl {
namespace {

// Calls waiting() for `ms` milliseconds, with `peer` publishing the CPU this thread is on
// when `crowd` (the other local rank sits on our CPU), else another one.
int wait_for(CpuSpread& s, std::atomic<int32_t>& peer, bool crowd, int ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    int here = sched_getcpu();
    peer.store(crowd ? here : here ^ 1);
    s.waiting();
  }
  return s.moves();
}

cpu_set_t affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  EXPECT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  return set;
}

TEST(CpuSpread, TheHigherRankLeavesACrowdedCpuAndKeepsItsMask) {
  cpu_set_t before = affinity();
  ASSERT_GE(CPU_COUNT(&before), 2) << "needs two CPUs";
  std::atomic<int32_t> peer{-1}, self{-1};
  CpuSpread s({&peer, &self}, 1, 1);  // we are local rank 1, the higher one
  const auto start = std::chrono::steady_clock::now();
  auto moved = start;  // just before the call that moved
  int from = -1;
  while (s.moves() == 0 && std::chrono::steady_clock::now() - start < std::chrono::milliseconds(100)) {
    from = sched_getcpu();
    peer.store(from);  // the other rank sits where we are
    moved = std::chrono::steady_clock::now();
    s.waiting();
  }
  ASSERT_EQ(s.moves(), 1);
  EXPECT_GE(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(1)) << "not before the crowding lasted";
  EXPECT_NE(self.load(), from) << "it published another CPU than the crowded one";
  cpu_set_t after = affinity();
  EXPECT_TRUE(CPU_EQUAL(&before, &after)) << "the thread's own mask comes back";
  // Crowded on: the next move comes, but not within 5 ms of the first.
  while (s.moves() == 1 && std::chrono::steady_clock::now() - moved < std::chrono::milliseconds(100)) {
    peer.store(sched_getcpu());
    s.waiting();
  }
  EXPECT_EQ(s.moves(), 2);
  EXPECT_GE(std::chrono::steady_clock::now() - moved, std::chrono::milliseconds(5));
}

TEST(CpuSpread, TheLowerRankAndSpreadRanksStay) {
  std::atomic<int32_t> low{-1}, high{-1};
  CpuSpread lower({&low, &high}, 0, 0);  // we are local rank 0: the other one moves, not us
  EXPECT_EQ(wait_for(lower, high, true, 10), 0);
  std::atomic<int32_t> a{-1}, b{-1};
  CpuSpread spread({&a, &b}, 1, 1);
  EXPECT_EQ(wait_for(spread, a, false, 10), 0) << "already on different CPUs";
}

TEST(CpuSpread, ABriefCrowdingIsLeftToTheScheduler) {
  // Crowded for ~0.1 ms at a time, never 1 ms — unless this thread is itself descheduled
  // inside a crowded stretch (a loaded machine, a sanitizer), which is a long crowding.
  // So: three tries, and a spreader that moves on brief crowding fails them all.
  int64_t fewest = INT64_MAX;
  for (int attempt = 0; attempt < 3 && fewest != 0; ++attempt) {
    std::atomic<int32_t> peer{-1}, self{-1};
    CpuSpread s({&peer, &self}, 1, 1);
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(10);
    bool crowd = false;
    while (std::chrono::steady_clock::now() < end) {
      crowd = !crowd;
      auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(100);
      while (std::chrono::steady_clock::now() < until) {
        int here = sched_getcpu();
        peer.store(crowd ? here : here ^ 1);
        s.waiting();
      }
    }
    fewest = std::min<int64_t>(fewest, int64_t(s.moves()));
  }
  EXPECT_EQ(fewest, 0);
}

}  // namespace
}  // namespace xm::ccl
