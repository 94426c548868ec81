// Links that fail, drain and lose frames: bytes are conserved, every flow finishes, the
// senders recover by go-back-N, and routes leave a drained link.
#include <gtest/gtest.h>

#include "sim/network.h"
#include "sim/scenario.h"
#include "sim_fixtures.h"

namespace xm::sim {
namespace {

using test::cc;
using test::flow;

// 8 hosts on two switches joined by two 100G trunks (links 8 and 9); each host on the
// left sends 2 MB to one on the right.
constexpr uint32_t kHosts = 8, kTrunk0 = kHosts, kTrunk1 = kHosts + 1;
SimTopology fabric() { return test::dumbbell(kHosts, 100, 100, 2); }

void add_cross_flows(Network& net, uint64_t bytes = 2'000'000) {
  for (uint32_t h = 0; h < kHosts / 2; ++h) ASSERT_TRUE(net.add_flow(flow(h, h + kHosts / 2, bytes)).ok());
}

// Routes that follow within 20 us, so a test sees the fabric after them soon.
NetConfig quick_reroute() {
  NetConfig config;
  config.reroute_delay = Time::us(20);
  return config;
}

// The left switch's port on `link`.
const Port& trunk_port(const Network& net, uint32_t link) {
  uint32_t seen = 0;
  for (size_t p = 0; p < net.port_count(); ++p) {
    const Port& port = net.port(p);
    if (port.owner == kHosts && port.peer_node == kHosts + 1 && seen++ == link - kTrunk0) return port;
  }
  ADD_FAILURE() << "no trunk port";
  return net.port(0);
}

LinkEvent event(Time at, uint32_t link, LinkEvent::Kind kind) {
  LinkEvent e;
  e.at = at, e.link = link, e.kind = kind;
  return e;
}

void expect_conserved(const Network& net) {
  const Counters& c = net.counters();
  const InFlightData in_flight = net.in_flight_data();
  EXPECT_EQ(c.data_packets_sent, c.data_packets_delivered + c.data_packets_dropped + in_flight.packets);
  EXPECT_EQ(c.data_wire_bytes_sent, c.data_wire_bytes_delivered + c.data_wire_bytes_dropped + in_flight.wire_bytes);
}

class Faults : public ::testing::TestWithParam<const char*> {};

TEST_P(Faults, ATrunkDownMidFlowLosesWhatItCarriedAndEveryFlowFinishes) {
  auto control = cc(GetParam());
  Network net(fabric(), NetConfig{}, *control, 1);
  add_cross_flows(net);
  ASSERT_TRUE(net.add_link_event(event(Time::us(100), kTrunk0, LinkEvent::Kind::kDown)).ok());
  ASSERT_TRUE(net.run(Time::ms(100)));
  const Counters& c = net.counters();
  EXPECT_GT(c.lost_on_links, 0u);
  EXPECT_GT(c.data_packets_dropped, 0u);
  EXPECT_EQ(c.reroutes, 1u);
  uint64_t retransmitted = 0;
  for (const Flow& f : net.flows()) {
    EXPECT_EQ(f.rcv_nxt, f.size);  // every byte arrived, in order
    retransmitted += f.retransmitted_bytes;
  }
  EXPECT_GT(retransmitted, 0u);     // the flows on the dead trunk went back
  EXPECT_GT(c.nacks + c.timeouts, 0u);
  expect_conserved(net);
}

TEST_P(Faults, ADrainedTrunkCarriesNothingOnceRoutesFollowAndLosesNothing) {
  auto control = cc(GetParam());
  Network net(fabric(), quick_reroute(), *control, 1);
  add_cross_flows(net);
  ASSERT_TRUE(net.add_link_event(event(Time::us(100), kTrunk0, LinkEvent::Kind::kDrain)).ok());
  // Routes follow at 120 us; what was queued for the trunk then has left by 200 us (its
  // queue holds well under 80 us of data at 100 Gbit/s).
  ASSERT_FALSE(net.run(Time::us(200)));
  const uint64_t carried = trunk_port(net, kTrunk0).tx_data_bytes;
  EXPECT_GT(carried, 0u);  // it was in use before
  ASSERT_TRUE(net.run(Time::ms(100)));
  EXPECT_EQ(trunk_port(net, kTrunk0).tx_data_bytes, carried);
  EXPECT_GT(trunk_port(net, kTrunk1).tx_data_bytes, 0u);
  EXPECT_EQ(net.counters().data_packets_dropped, 0u);  // draining is not failing
  EXPECT_EQ(net.counters().lost_on_links, 0u);
  expect_conserved(net);
}

TEST_P(Faults, ALossyLinkCostsRetransmissionsNotBytes) {
  auto control = cc(GetParam());
  Network net(test::star(2), NetConfig{}, *control, 7);
  ASSERT_TRUE(net.add_flow(flow(0, 1, 5'000'000)).ok());
  LinkEvent lossy = event(Time(), 1, LinkEvent::Kind::kLoss);  // the switch -> host 1 link
  lossy.loss = 0.01;
  ASSERT_TRUE(net.add_link_event(lossy).ok());
  ASSERT_TRUE(net.run(Time::ms(200)));
  const Flow& f = net.flows()[0];
  EXPECT_EQ(f.rcv_nxt, f.size);
  const Counters& c = net.counters();
  // About 1 % of the frames each way (data one way, ACKs the other) are lost.
  const double lost = double(c.lost_on_links) / double(c.data_packets_sent + c.acks + c.nacks);
  EXPECT_GT(lost, 0.005);
  EXPECT_LT(lost, 0.02);
  EXPECT_GT(f.retransmitted_bytes, 0u);
  EXPECT_GT(c.nacks, 0u);
  expect_conserved(net);
}

TEST_P(Faults, ALinkBackUpCarriesAgain) {
  auto control = cc(GetParam());
  Network net(fabric(), quick_reroute(), *control, 1);
  add_cross_flows(net, 10'000'000);
  ASSERT_TRUE(net.add_link_event(event(Time::us(50), kTrunk0, LinkEvent::Kind::kDown)).ok());
  ASSERT_TRUE(net.add_link_event(event(Time::us(300), kTrunk0, LinkEvent::Kind::kUp)).ok());
  ASSERT_FALSE(net.run(Time::us(320)));
  const uint64_t before = trunk_port(net, kTrunk0).tx_data_bytes;
  ASSERT_TRUE(net.run(Time::ms(100)));
  EXPECT_GT(trunk_port(net, kTrunk0).tx_data_bytes, before + 1'000'000);  // in use again
  EXPECT_EQ(net.counters().reroutes, 2u);
  expect_conserved(net);
}

INSTANTIATE_TEST_SUITE_P(Algorithms, Faults, ::testing::Values("dcqcn", "hpcc", "tita"));

TEST(LinkEvents, BadEventsAreRefused) {
  auto control = cc("none");
  Network net(fabric(), NetConfig{}, *control, 1);
  EXPECT_EQ(net.add_link_event(event(Time(), 99, LinkEvent::Kind::kDown)).message(),
            "link event: link 99 out of range (10 links)");
  LinkEvent lossy = event(Time(), 0, LinkEvent::Kind::kLoss);
  lossy.loss = 2;
  EXPECT_EQ(net.add_link_event(lossy).message(), "link event: loss must be in [0, 1]");
}

TEST(LinkEvents, ScenarioEventsNameTheirLinkByItsEnds) {
  const std::string dir = XM_EXAMPLES_DIR;
  Result<Scenario> s = parse_scenario(
      "topology: {spec: hpcc-fat-tree-320.yaml}\n"
      "traffic: [{permutation: {bytes: 1000}}]\n"
      "events:\n"
      "  - {at_us: 5, link: [agg-p0-0, core-g0-0], set: down}\n"
      "  - {at_us: 7, link: [tor-s0, nowhere], set: up}\n",
      dir + "/s.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  Result<SimTopology> t = scenario_topology(*s);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ(scenario_link_events(*s, *t).error().message,
            dir + "/s.yaml:5:22: events[1].link: no node named \"nowhere\" (names as `xm topo show` prints them)");
  s->events.pop_back();
  Result<std::vector<LinkEvent>> events = scenario_link_events(*s, *t);
  ASSERT_TRUE(events.ok()) << events.error().message;
  const SimLink& link = t->links[(*events)[0].link];
  EXPECT_EQ(t->names[link.a] + " " + t->names[link.b], "agg-p0-0 core-g0-0");
  EXPECT_EQ((*events)[0].at, Time::us(5));
  EXPECT_EQ(parse_scenario("topology: {spec: x.yaml}\ntraffic: [{permutation: {bytes: 1}}]\n"
                           "events: [{at_us: 1, link: [a, b], set: off}]\n", "s.yaml").error().message,
            "s.yaml:3:40: events[0].set: expected down, up, drain or restore, got \"off\"");
}

}  // namespace
}  // namespace xm::sim
