// Physics of the fabric: line rate, conservation of bytes, lossless PFC, determinism.
#include "sim/network.h"

#include <gtest/gtest.h>

#include "sim_fixtures.h"

namespace xm::sim {
namespace {

using test::cc;
using test::flow;
using test::star;

// One long flow on an idle path: goodput is the line rate times the payload share of
// each packet on the wire.
double lone_flow_goodput_gbps(const std::string& algorithm, uint32_t int_bytes) {
  auto control = cc(algorithm);
  NetConfig config;
  Network net(star(2), config, *control, 1);
  const uint64_t bytes = 20'000'000;
  EXPECT_TRUE(net.add_flow(flow(0, 1, bytes)).ok());
  EXPECT_TRUE(net.run(Time::ms(10)));
  const Flow& f = net.flows()[0];
  const double expected = 100 * test::payload_fraction(config, int_bytes);
  (void)expected;
  return double(bytes) * 8 / (f.received_at - f.start).seconds_f() / 1e9;
}

TEST(Network, OneFlowReachesLineRateLessHeaders) {
  NetConfig config;
  const double want = 100 * test::payload_fraction(config);  // 92.4 Gbit/s for 1000 B
  EXPECT_NEAR(lone_flow_goodput_gbps("none", 0), want, want * 0.01);
  EXPECT_NEAR(lone_flow_goodput_gbps("dcqcn", 0), want, want * 0.01);
}

TEST(Network, HpccHoldsOneFlowAtItsUtilisationTarget) {
  NetConfig config;
  // η = 0.95 of the wire, and HPCC's INT header (44 B) shrinks the payload share.
  const double want = 0.95 * 100 * test::payload_fraction(config, 44);
  EXPECT_NEAR(lone_flow_goodput_gbps("hpcc", 44), want, want * 0.02);
}

TEST(Network, LoneFlowTakesItsIdealTime) {
  // Across a two-switch path with a faster trunk: store-and-forward of every packet.
  for (uint64_t bytes : {1ull, 999ull, 1000ull, 1001ull, 123456ull, 3'000'000ull}) {
    auto control = cc("none");
    Network net(test::dumbbell(4, 100, 400), NetConfig{}, *control, 1);
    ASSERT_TRUE(net.add_flow(flow(0, 3, bytes)).ok());
    ASSERT_TRUE(net.run(Time::ms(10)));
    const Flow& f = net.flows()[0];
    // Exact, except that the last ACK may wait behind the previous one on the receiver's
    // wire when the last packet is tiny (the ideal leaves that out): at most one ACK time.
    const Time fct = f.finish - f.start;
    EXPECT_GE(fct, f.ideal) << bytes << " bytes";
    EXPECT_LE(fct, f.ideal + Rate::gbps(100).tx_time(84)) << bytes << " bytes";
  }
}

// A barrier (a 0-byte flow) sends nothing, so it takes no source port: the flows after
// it hash onto the same paths as without it, in this engine as in the flow engine.
TEST(Network, ABarrierTakesNoSourcePort) {
  auto control = cc("none");
  Network alone(star(3), NetConfig{}, *control, 1), with(star(3), NetConfig{}, *control, 1);
  ASSERT_TRUE(alone.add_flow(flow(0, 1, 1000)).ok());
  FlowSpec barrier = flow(0, 0, 0);
  ASSERT_TRUE(with.add_flow(barrier).ok());
  ASSERT_TRUE(with.add_flow(flow(0, 1, 1000)).ok());
  EXPECT_EQ(with.flows()[1].sport, alone.flows()[0].sport);
  EXPECT_EQ(with.flows()[1].hash_fwd, alone.flows()[0].hash_fwd);
}

// A 16-to-1 incast with no congestion control: PFC must hold every packet.
struct IncastOutcome {
  Counters counters;
  InFlightData in_flight;
  bool done = false;
  Time paused;
};

IncastOutcome incast(const std::string& algorithm, bool pfc, uint64_t seed = 1, double buffer_mb = 1) {
  auto control = cc(algorithm);
  NetConfig config;
  config.pfc = pfc;
  config.buffer_mb = buffer_mb;  // small by default, so the burst must be held back or dropped
  Network net(star(17), config, *control, seed);
  for (uint32_t s = 0; s < 16; ++s) EXPECT_TRUE(net.add_flow(flow(s, 16, 500'000)).ok());
  IncastOutcome o;
  o.done = net.run(Time::ms(50));
  o.counters = net.counters();
  o.in_flight = net.in_flight_data();
  for (size_t p = 0; p < net.port_count(); ++p) o.paused += net.paused_time(p);
  return o;
}

TEST(Network, PfcIncastDropsNothing) {
  IncastOutcome o = incast("none", true);
  EXPECT_TRUE(o.done);
  EXPECT_EQ(o.counters.data_packets_dropped, 0u);
  EXPECT_GT(o.counters.pause_frames, 0u) << "the buffer is small enough that PFC must act";
  EXPECT_GT(o.paused, Time());
  EXPECT_EQ(o.counters.retransmitted_bytes, 0u);
}

TEST(Network, WithoutPfcTheSameIncastDropsAndRecovers) {
  IncastOutcome o = incast("none", false);
  EXPECT_TRUE(o.done) << "go-back-N and the retransmission timer recover every loss";
  EXPECT_GT(o.counters.data_packets_dropped, 0u);
  EXPECT_GT(o.counters.retransmitted_bytes, 0u);
  EXPECT_EQ(o.counters.pause_frames, 0u);
}

TEST(Network, BytesSentEqualDeliveredPlusDroppedPlusInFlight) {
  for (bool pfc : {true, false}) {
    IncastOutcome o = incast("dcqcn", pfc);
    const Counters& c = o.counters;
    EXPECT_EQ(c.data_wire_bytes_sent,
              c.data_wire_bytes_delivered + c.data_wire_bytes_dropped + o.in_flight.wire_bytes);
    EXPECT_EQ(c.data_packets_sent, c.data_packets_delivered + c.data_packets_dropped + o.in_flight.packets);
    EXPECT_GE(c.payload_bytes_sent, 16u * 500'000) << "every byte sent at least once";
  }
}

TEST(Network, SameSeedSameRunDifferentSeedDifferentMarks) {
  // A large buffer, so queues pass the ECN thresholds and marking (random) decides rates.
  IncastOutcome a = incast("dcqcn", true, 42, 32), b = incast("dcqcn", true, 42, 32), c = incast("dcqcn", true, 43, 32);
  EXPECT_EQ(a.counters.ecn_marks, b.counters.ecn_marks);
  EXPECT_EQ(a.counters.data_packets_dropped, b.counters.data_packets_dropped);
  EXPECT_EQ(a.counters.data_packets_sent, b.counters.data_packets_sent);
  EXPECT_EQ(a.paused, b.paused);
  EXPECT_GT(a.counters.ecn_marks, 0u);
  EXPECT_NE(a.counters.ecn_marks, c.counters.ecn_marks) << "marking draws from the seeded generator";
}

}  // namespace
}  // namespace xm::sim

namespace xm::sim {
namespace {

// Spraying: one flow's packets spread evenly over parallel trunks, arrive out of order,
// and the receiver takes them without NACKs or retransmissions.
TEST(Network, SprayingSpreadsOneFlowOverEveryTrunk) {
  auto control = test::cc("none");
  NetConfig config;
  config.load_balancing = LoadBalancing::kSpray;
  // 100 G hosts, four 25 G trunks: the flow needs all four, and they reorder it.
  Network net(test::dumbbell(2, 100, 25, 4), config, *control, 1);
  ASSERT_TRUE(net.add_flow(test::flow(0, 1, 5'000'000)).ok());
  ASSERT_TRUE(net.run(Time::ms(20)));
  EXPECT_EQ(net.counters().nacks, 0u);
  EXPECT_EQ(net.counters().retransmitted_bytes, 0u);
  uint64_t least = UINT64_MAX, most = 0;
  for (size_t p = 0; p < net.port_count(); ++p) {
    const Port& port = net.port(p);
    if (net.topology().is_host(port.owner) || net.topology().is_host(port.peer_node) || port.tx_data_bytes == 0) continue;
    least = std::min(least, port.tx_data_bytes), most = std::max(most, port.tx_data_bytes);
  }
  EXPECT_LT(double(most - least) / double(most), 0.1) << "every trunk carries about a quarter (random per packet)";
  const Flow& f = net.flows()[0];
  const double gbps = 5e6 * 8 / (f.received_at - f.start).seconds_f() / 1e9;
  EXPECT_GT(gbps, 0.95 * 100 * test::payload_fraction(config)) << "all four trunks at once";
}

}  // namespace
}  // namespace xm::sim

namespace xm::sim {
namespace {

// ACK coalescing: one ACK per four packets, and the flow still runs at line rate.
TEST(Network, AckCoalescingSendsFewerAcksAtTheSameRate) {
  auto control = test::cc("none");
  NetConfig config;
  config.ack_every = 4;
  Network net(test::star(2), config, *control, 1);
  ASSERT_TRUE(net.add_flow(test::flow(0, 1, 4'000'000)).ok());
  ASSERT_TRUE(net.run(Time::ms(5)));
  EXPECT_EQ(net.counters().acks, 4000u / 4);
  const Flow& f = net.flows()[0];
  const double gbps = 4e6 * 8 / (f.received_at - f.start).seconds_f() / 1e9;
  EXPECT_NEAR(gbps, 100 * test::payload_fraction(config), 1.0);
}

}  // namespace
}  // namespace xm::sim
