// The event queue and engine: order, ties, and the replace-top shortcut.
#include "sim/engine.h"
#include "sim/calendar_queue.h"

#include <gtest/gtest.h>

#include <vector>

#include "sim/packet_pool.h"
#include "sim/random.h"

namespace xm::sim {
namespace {

TEST(EventQueue, PopsInTimeOrderWithTiesInScheduleOrder) {
  EventQueue q;
  Random rng(7);
  std::vector<std::pair<int64_t, uint32_t>> want;
  for (uint32_t i = 0; i < 5000; ++i) {
    int64_t t = int64_t(rng.below(200));  // many ties
    q.push(Time::ps(t), i);
    want.emplace_back(t, i);
  }
  std::stable_sort(want.begin(), want.end(), [](auto& a, auto& b) { return a.first < b.first; });
  for (auto& [t, id] : want) {
    ASSERT_EQ(q.top().at.ps(), t);
    ASSERT_EQ(q.top().target, id);
    q.pop();
  }
  EXPECT_TRUE(q.empty());
}

TEST(EventQueue, ReplaceTopEqualsPopThenPush) {
  EventQueue a, b;
  Random rng(3);
  for (uint32_t i = 0; i < 1000; ++i) {
    Time t = Time::ps(int64_t(rng.below(1000)));
    a.push(t, i), b.push(t, i);
  }
  for (uint32_t i = 0; i < 3000; ++i) {
    Time t = a.top().at + Time::ps(int64_t(rng.below(500)));
    a.replace_top(t, 5000 + i);
    b.pop();
    b.push(t, 5000 + i);
    ASSERT_EQ(a.top().at, b.top().at);
    ASSERT_EQ(a.top().target, b.top().target);
  }
}

TEST(Engine, HandlersSeeTheirOwnTimeAndMayScheduleAtNow) {
  Engine e;
  std::vector<std::pair<int64_t, uint32_t>> seen;
  e.schedule(Time::ns(5), 1);
  e.schedule(Time::ns(2), 2);
  auto dispatch = [&](uint32_t t) {
    seen.emplace_back(e.now().ps(), t);
    if (t == 2) e.schedule(e.now(), 3);  // same instant: runs after the handler returns
    if (t == 3) e.schedule(e.now() + Time::ns(10), 4);
  };
  EXPECT_EQ(e.run(Time::ns(100), 100, dispatch), Engine::Stopped::kDone);
  std::vector<std::pair<int64_t, uint32_t>> want{{2000, 2}, {2000, 3}, {5000, 1}, {12000, 4}};
  EXPECT_EQ(seen, want);
  EXPECT_EQ(e.events(), 4u);
}

TEST(Engine, StopsAtTheTimeLimitWithoutRunningLaterEvents) {
  Engine e;
  int ran = 0;
  e.schedule(Time::us(1), 1);
  e.schedule(Time::us(3), 2);
  EXPECT_EQ(e.run(Time::us(2), 100, [&](uint32_t) { ++ran; }), Engine::Stopped::kTimeLimit);
  EXPECT_EQ(ran, 1);
  EXPECT_EQ(e.pending(), 1u);
}

TEST(PacketPool, ReusesFreedPackets) {
  PacketPool pool;
  PacketId a = pool.alloc(), b = pool.alloc();
  EXPECT_NE(a, b);
  pool.free(a);
  EXPECT_EQ(pool.alloc(), a);
  EXPECT_EQ(pool.live(), 2u);
  EXPECT_EQ(pool.capacity(), 2u);
}

TEST(Units, SerialisationIsExactInPicoseconds) {
  EXPECT_EQ(Rate::gbps(100).tx_time(1000).ps(), 80000);
  EXPECT_EQ(Rate::gbps(400).tx_time(4178).ps(), 83560);
  EXPECT_EQ(Rate::gbps(3).tx_time(1).ps(), 2667);  // rounded up
}

}  // namespace
}  // namespace xm::sim

namespace xm::sim {
namespace {

// The calendar queue must order events exactly as the heap does, across bucket edges,
// the horizon (heap overflow) and idle stretches, with events scheduled while running.
TEST(CalendarQueue, OrdersExactlyAsTheHeap) {
  CalendarQueue cal;
  EventQueue heap;
  Random rng(11);
  auto add = [&](Time at, uint32_t target) {
    cal.push(at, target);
    heap.push(at, target);
  };
  add(Time(), 4000);  // at the very start: the first bucket must not be skipped
  add(Time(), 4001);
  for (uint32_t i = 0; i < 2000; ++i) add(Time::ps(int64_t(rng.below(3'000'000))), i);
  add(Time::ms(5), 999999);  // far beyond the horizon
  uint32_t next = 5000;
  for (int n = 0; n < 20000 && !heap.empty(); ++n) {
    ASSERT_FALSE(cal.empty());
    const Event a = cal.top(), b = heap.top();
    ASSERT_EQ(a.at, b.at) << n;
    ASSERT_EQ(a.target, b.target) << n;
    cal.pop(), heap.pop();
    // Like handlers: schedule at now, soon, or far, sometimes several.
    for (uint64_t k = rng.below(3); k > 0; --k) {
      const uint64_t kind = rng.below(10);
      const Time d = kind == 0 ? Time() : kind < 8 ? Time::ps(int64_t(rng.below(2'000'000))) : Time::us(double(rng.below(400)));
      if (n < 15000) add(a.at + d, next++);
    }
  }
  EXPECT_TRUE(heap.empty());
  EXPECT_TRUE(cal.empty());
}

}  // namespace
}  // namespace xm::sim
