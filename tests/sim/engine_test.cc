// The event queue and engine: order, ties, and the replace-top shortcut.
#include "sim/engine.h"

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
