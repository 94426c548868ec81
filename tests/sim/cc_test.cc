// Congestion control: each algorithm shares a bottleneck fairly, and the ones with a
// window or fast feedback keep an incast's queue short.
#include <gtest/gtest.h>

#include <algorithm>

#include "sim/cc/dcqcn.h"
#include "sim/network.h"
#include "sim_fixtures.h"

namespace xm::sim {
namespace {

using test::cc;
using test::flow;

// Two long flows from different hosts into one receiver; the second starts when the
// first already has the whole link. Returns the two goodputs (Gbit/s) over the last
// `window` before `end`.
std::pair<double, double> two_flow_shares(const std::string& algorithm, double gbps, Time second_start, Time end,
                                          Time window) {
  auto control = cc(algorithm, gbps);
  Network net(test::star(3, gbps, 1000), NetConfig{}, *control, 1);
  const uint64_t lots = 1'000'000'000;
  EXPECT_TRUE(net.add_flow(flow(0, 2, lots)).ok());
  EXPECT_TRUE(net.add_flow(flow(1, 2, lots, second_start)).ok());
  net.run(end - window);
  const uint64_t a0 = net.flows()[0].rcv_nxt, b0 = net.flows()[1].rcv_nxt;
  net.run(end);
  const double seconds = window.seconds_f();
  return {double(net.flows()[0].rcv_nxt - a0) * 8 / seconds / 1e9, double(net.flows()[1].rcv_nxt - b0) * 8 / seconds / 1e9};
}

struct FairCase {
  const char* cc;
  double gbps;
  double end_ms;
};

class Fairness : public ::testing::TestWithParam<FairCase> {};

TEST_P(Fairness, TwoFlowsConvergeToEqualShares) {
  const FairCase c = GetParam();
  // Goodputs averaged over the second half of the run.
  auto [a, b] = two_flow_shares(c.cc, c.gbps, Time::us(200), Time::ms(c.end_ms), Time::ms(c.end_ms / 2));
  const double payload = test::payload_fraction(NetConfig{}, 44) * c.gbps;
  EXPECT_GT(a + b, 0.85 * payload) << "the bottleneck stays busy";
  EXPECT_LT(a + b, 1.0 * c.gbps);
  EXPECT_NEAR(a / (a + b), 0.5, 0.05) << c.cc << ": " << a << " vs " << b << " Gbit/s";
}

// The paper's DCQCN moves slowly (55 us timers, five fast-recovery steps): it gets
// 100 ms. 25 Gbit/s keeps the event count small.
INSTANTIATE_TEST_SUITE_P(Algorithms, Fairness,
                         ::testing::Values(FairCase{"dcqcn", 25, 10}, FairCase{"dcqcn-paper", 25, 100},
                                           FairCase{"hpcc", 25, 20}, FairCase{"tita", 25, 20}),
                         [](const auto& info) {
                           std::string n = info.param.cc;
                           std::replace(n.begin(), n.end(), '-', '_');
                           return n;
                         });

// 16-to-1 incast of 1 MB each on 100 Gbit/s: all algorithms finish everything; HPCC and
// TiTa, which bound what is in flight, keep the receiver's queue (and PFC) far below
// what line-rate senders build.
struct IncastResult {
  uint64_t queue_p99 = 0;
  uint64_t pauses = 0;
  bool done = false;
};

IncastResult incast(const std::string& algorithm) {
  auto control = cc(algorithm);
  Network net(test::star(17), NetConfig{}, *control, 1);
  for (uint32_t s = 0; s < 16; ++s) EXPECT_TRUE(net.add_flow(flow(s, 16, 1'000'000)).ok());
  IncastResult r;
  r.done = net.run(Time::ms(20));
  for (size_t c = 0; c < net.link_classes().size(); ++c)
    if (net.link_classes()[c] == "tor->host") r.queue_p99 = net.queue_histograms()[c].percentile(0.99);
  r.pauses = net.counters().pause_frames;
  EXPECT_EQ(net.counters().data_packets_dropped, 0u);
  return r;
}

TEST(CongestionControl, WindowedAlgorithmsKeepIncastQueuesShort) {
  IncastResult none = incast("none"), dcqcn = incast("dcqcn"), hpcc = incast("hpcc"), tita = incast("tita");
  for (const IncastResult* r : {&none, &dcqcn, &hpcc, &tita}) EXPECT_TRUE(r->done);
  EXPECT_GT(none.queue_p99, 1'000'000u) << "16 senders at line rate pile up megabytes";
  EXPECT_LT(hpcc.queue_p99, none.queue_p99 / 4);
  EXPECT_LT(tita.queue_p99, none.queue_p99 / 4);
  EXPECT_LE(tita.queue_p99, hpcc.queue_p99);
}

TEST(Dcqcn, ParameterSetsFollowTheHpccSimulator) {
  DcqcnParams v = DcqcnParams::vendor(Rate::gbps(100)), p = DcqcnParams::paper(Rate::gbps(100));
  EXPECT_EQ(v.alpha_interval, Time::us(1));
  EXPECT_EQ(v.decrease_interval, Time::us(4));
  EXPECT_EQ(v.increase_interval, Time::us(300));
  EXPECT_DOUBLE_EQ(v.ai.bps(), 20e6);
  EXPECT_DOUBLE_EQ(v.hai.bps(), 200e6);
  EXPECT_EQ(p.increase_interval, Time::us(55));
  EXPECT_EQ(p.fast_recovery_steps, 5u);
}

TEST(CongestionControl, UnknownNameListsTheKnownOnes) {
  auto r = make_cc("cubic", Rate::gbps(100));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("hpcc"), std::string::npos);
}

}  // namespace
}  // namespace xm::sim
