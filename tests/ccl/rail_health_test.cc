// When a rail is dead: the rule on samples, and what the kernel reports on real sockets.
#include "ccl/tcp/rail_health.h"

#include <gtest/gtest.h>
#include <sys/socket.h>

#include <thread>
#include <vector>

#include "ccl/net/socket.h"

namespace xm::ccl {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

RailSample heard(uint32_t ms) { return {true, false, ms}; }
RailSample unacked(uint32_t ms) { return {true, true, ms}; }

TEST(RailHealth, AnUnacknowledgedRailIsDeadOnlyWhileAnotherIsHeard) {
  std::vector<RailSample> rails{heard(10), unacked(500)};
  EXPECT_EQ(silent_rails(rails, 400ms), std::vector<size_t>{1});
  rails[0] = heard(300);  // the peer's host quiet too: a starved peer, not a dead path
  EXPECT_TRUE(silent_rails(rails, 400ms).empty());
  rails = {heard(10), unacked(300)};
  EXPECT_TRUE(silent_rails(rails, 400ms).empty());
  EXPECT_TRUE(suspect_a_rail(rails, 400ms));
}

TEST(RailHealth, ARailThatWasIdleIsJudgedFromWhenItSent) {
  InFlightWatch watch;
  Clock::time_point t0{};
  RailSample idle = heard(1500);
  watch.observe(idle, t0);
  // Idle for 1.5 s, then it sends: TCP_INFO says 1.5 s since the last acknowledgement.
  RailSample s = unacked(1500);
  watch.observe(s, t0 + 50ms);
  EXPECT_EQ(s.ms_since_ack, 0u);
  std::vector<RailSample> rails{heard(5), s};
  EXPECT_TRUE(silent_rails(rails, 400ms).empty());
  // Still nothing acknowledged 450 ms later: now it is dead.
  s = unacked(1950);
  watch.observe(s, t0 + 500ms);
  EXPECT_EQ(s.ms_since_ack, 450u);
  rails = {heard(5), s};
  EXPECT_EQ(silent_rails(rails, 400ms), std::vector<size_t>{1});
  // An acknowledgement (or an idle rail) starts the watch over.
  RailSample acked = heard(0);
  watch.observe(acked, t0 + 550ms);
  s = unacked(900);
  watch.observe(s, t0 + 600ms);
  EXPECT_EQ(s.ms_since_ack, 0u);
}

TEST(RailHealth, TheWatchNeverLengthensWhatTcpSays) {
  InFlightWatch watch;
  Clock::time_point t0{};
  RailSample s = unacked(20);
  watch.observe(s, t0);
  s = unacked(30);
  watch.observe(s, t0 + 2s);
  EXPECT_EQ(s.ms_since_ack, 30u);
}

// A peer that stops reading closes its window: data waits in the sender's kernel, nothing is
// in flight, and the rail is not stuck (the other side of a NIC without carrier, whose data
// waits too but through an open window: tests/testbed).
TEST(RailHealth, DataHeldBackByAClosedWindowIsNotStuck) {
  auto deadline = net::Clock::now() + 5s;
  uint16_t port = 0;
  Result<net::Fd> listener = net::listen_on("127.0.0.1", 0, &port);
  ASSERT_TRUE(listener.ok()) << listener.error().message;
  Result<net::Fd> sender = net::connect_to(net::Endpoint{"127.0.0.1", port}, deadline);
  ASSERT_TRUE(sender.ok()) << sender.error().message;
  Result<net::Fd> receiver = net::accept_one(listener->get(), deadline);  // and never reads
  ASSERT_TRUE(receiver.ok()) << receiver.error().message;
  std::vector<char> bytes(1 << 20, 'x');
  size_t sent = 0;
  for (ssize_t n; (n = ::send(sender->get(), bytes.data(), bytes.size(), MSG_DONTWAIT)) > 0;) sent += size_t(n);
  ASSERT_GT(sent, 0u);
  std::this_thread::sleep_for(300ms);  // every sent segment acknowledged, with a window of 0
  Result<RailSample> s = sample_rail(sender->get());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->in_flight) << sent << " bytes sent into a closed window";
}

}  // namespace
}  // namespace xm::ccl
