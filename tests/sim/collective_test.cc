// Collectives replayed from xccl's own schedules: the flows they make, where those go,
// how long they take on the fabric, and the errors a scenario gets for what cannot run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/collective/results.h"
#include "sim/fluid/fluid_network.h"
#include "sim/scenario.h"
#include "sim_fixtures.h"
#include "topo/fabric.h"
#include "topo/spec_io.h"

namespace xm::sim {
namespace {

using sched::Algorithm;
using sched::Collective;

// 4 servers of 2 accelerators and 2 NICs of 100 Gbit/s, rail-optimized; each ToR has
// `uplinks` of 100 Gbit/s to the 2 aggregation switches (2: 2:1 oversubscribed).
// A spec's fabric with its servers' intra switches, as collective scenarios build it.
SimTopology with_intra(const std::string& spec) {
  Result<topo::ClusterSpec> s = topo::parse_spec(spec, "r.yaml");
  EXPECT_TRUE(s) << s.error().message;
  Result<topo::Fabric> f = topo::build_fabric(*s);
  EXPECT_TRUE(f) << f.error().message;
  Result<SimTopology> t = topology_from_fabric(*f, true);
  EXPECT_TRUE(t) << t.error().message;
  return *t;
}

SimTopology rails4x2(uint32_t uplinks = 4) {
  return with_intra("name: r\nservers: 4\nserver: {accelerators: 2, nics: 2, nic_gbps: 100}\n"
                    "fabric:\n  kind: rail-optimized\n  tor: {ports: 8, servers: 4, uplinks: " +
                    std::to_string(uplinks) + "}\n  agg: {ports: 4, tors: 2, count: 2, link: {gbps: 100, latency_ns: 1000}}\n");
}

// The same servers on a conventional Clos: a server's NICs share one ToR, two hops
// apart through it as through the intra switch.
SimTopology clos4x2() {
  return with_intra("name: c\nservers: 4\nserver: {accelerators: 2, nics: 2, nic_gbps: 100}\n"
                    "fabric:\n  kind: clos\n  tor: {ports: 8, servers: 2, uplinks: 4}\n"
                    "  agg: {ports: 4, tors: 2, count: 4, link: {gbps: 100, latency_ns: 1000}}\n");
}

CollectiveOptions options(Collective op, Algorithm algorithm, uint64_t bytes = 4 << 20) {
  CollectiveOptions c;
  c.name = "c";
  c.op = op, c.algorithm = algorithm, c.bytes = bytes;
  return c;
}

// Runs `flows` with no congestion control; returns the network, finished.
std::unique_ptr<Network> run(const SimTopology& t, const std::vector<FlowSpec>& flows,
                             std::unique_ptr<CongestionControl>& cc) {
  cc = test::cc("none");
  auto net = std::make_unique<Network>(t, NetConfig{}, *cc, 1);
  for (const FlowSpec& f : flows) EXPECT_TRUE(net->add_flow(f));
  net->run(Time::seconds(1));
  return net;
}

TEST(CollectiveTopology, IntraSwitchesJoinEachServersNicsAndCarryItsOwnTraffic) {
  SimTopology t = rails4x2();
  EXPECT_TRUE(t.intra);
  uint32_t intra = 0;
  for (Tier tier : t.tier) intra += tier == Tier::kIntra;
  EXPECT_EQ(intra, 4u);
  ASSERT_EQ(t.accelerator_nic.size(), 4u);
  const uint32_t a = t.accelerator_nic[1][0], b = t.accelerator_nic[1][1], far = t.accelerator_nic[2][1];
  EXPECT_EQ(t.server[a], 1u);
  EXPECT_NE(t.rail[a], t.rail[b]);
  Wiring w = wire(t);
  Routing routing(t, w);
  // Inside a server: through its intra switch (2 links), never a ToR.
  std::vector<uint32_t> inside = routing.path_links(a, b);
  ASSERT_EQ(inside.size(), 2u);
  EXPECT_EQ(t.tier[std::max(t.links[inside[0]].a, t.links[inside[0]].b)], Tier::kIntra);
  // To another server: through the fabric, never the intra switch.
  for (uint32_t l : routing.path_links(a, far)) EXPECT_NE(t.tier[std::max(t.links[l].a, t.links[l].b)], Tier::kIntra);
}

// Where the ToR is as near as the intra switch (Clos), a server's own traffic still takes
// the intra switch, as NVLink does (it had taken the ToR half the time).
TEST(CollectiveTopology, OnAClosAServersOwnTrafficStillTakesItsIntraSwitch) {
  SimTopology t = clos4x2();
  Wiring w = wire(t);
  Routing routing(t, w);
  for (uint32_t s = 0; s < 4; ++s) {
    const uint32_t a = t.accelerator_nic[s][0], b = t.accelerator_nic[s][1];
    for (auto [from, to] : {std::pair{a, b}, {b, a}}) {
      const std::vector<PortId> ports = routing.host_ports(from, to);
      ASSERT_EQ(ports.size(), 1u);
      EXPECT_EQ(t.tier[w.peer_node[ports[0]]], Tier::kIntra) << "server " << s;
    }
  }
}

TEST(CollectiveReplay, RingAllReduceSendsTwoNMinusOneSegmentsPerRankInDependencyOrder) {
  SimTopology t = rails4x2();
  std::vector<FlowSpec> flows;
  Result<CollectiveReplay> r = replay_collective(options(Collective::kAllReduce, Algorithm::kRing), t, {}, flows);
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->algorithm, "ring");
  EXPECT_EQ(r->ranks, 8);
  ASSERT_EQ(r->flows.size(), flows.size());
  std::vector<uint64_t> sent(8, 0);
  for (size_t i = 0; i < flows.size(); ++i) {
    for (uint32_t d : flows[i].after) EXPECT_LT(d, i);
    if (flows[i].bytes == 0) continue;  // a barrier: a step that waits for more than its message
    sent[r->flows[i].src_rank] += flows[i].bytes;
    EXPECT_EQ(r->flows[i].dst_rank, (r->flows[i].src_rank + 1) % 8);  // the ring's right neighbour
  }
  for (uint64_t s : sent) EXPECT_EQ(s, 2 * 7 * (uint64_t(4) << 20) / 8);
  EXPECT_FALSE(r->last_flows.empty());
}

TEST(CollectiveReplay, RailAwareSchedulesKeepEveryByteBetweenServersOnItsRail) {
  SimTopology t = rails4x2();
  for (auto [op, algorithm, rail_only] :
       {std::tuple{Collective::kAllReduce, Algorithm::kHierarchical, true},
        {Collective::kAllToAll, Algorithm::kPxn, true}, {Collective::kAllToAll, Algorithm::kPairwise, false},
        {Collective::kAllReduce, Algorithm::kRing, false}}) {
    std::vector<FlowSpec> flows;
    Result<CollectiveReplay> r = replay_collective(options(op, algorithm), t, {}, flows);
    ASSERT_TRUE(r) << r.error().message;
    size_t cross_rail = 0, inside = 0;
    for (size_t i = 0; i < flows.size(); ++i) {
      if (flows[i].bytes == 0) continue;
      if (t.server[flows[i].src] == t.server[flows[i].dst]) {
        ++inside;
        EXPECT_EQ(r->flows[i].rail, UINT32_MAX);
      } else {
        cross_rail += t.rail[flows[i].src] != t.rail[flows[i].dst];
      }
    }
    EXPECT_GT(inside, 0u) << r->algorithm;
    EXPECT_EQ(cross_rail == 0, rail_only) << r->algorithm;
  }
}

TEST(CollectiveReplay, OneRankPerServerStripesOverTheRailsAsked) {
  SimTopology t = rails4x2();
  CollectiveOptions c = options(Collective::kAllReduce, Algorithm::kRing);
  c.per_server = 1;
  c.all_rails = true;
  std::vector<FlowSpec> flows;
  Result<CollectiveReplay> r = replay_collective(c, t, {}, flows);
  ASSERT_TRUE(r) << r.error().message;
  uint64_t on_rail[2] = {0, 0};
  for (size_t i = 0; i < flows.size(); ++i) {
    if (flows[i].bytes == 0) continue;
    ASSERT_NE(r->flows[i].rail, UINT32_MAX);
    EXPECT_EQ(t.rail[flows[i].src], t.rail[flows[i].dst]);
    on_rail[r->flows[i].rail] += flows[i].bytes;
  }
  EXPECT_EQ(on_rail[0], on_rail[1]);
  EXPECT_EQ(on_rail[0] + on_rail[1], 4 * 2 * 3 * (uint64_t(4) << 20) / 4);
}

// server_stride takes every k-th server: a pipeline's stages, a data-parallel group
// across pipelines. The ranks sit there and nowhere else.
TEST(CollectivePlacement, AServerStrideTakesEveryKthServer) {
  SimTopology t = rails4x2();
  CollectiveOptions c = options(Collective::kAllReduce, Algorithm::kRing);
  c.first_server = 1, c.server_stride = 2, c.per_server = 1, c.first_local = 1;
  Result<Placement> p = place(c, t);
  ASSERT_TRUE(p) << p.error().message;
  ASSERT_EQ(p->home.size(), 2u);  // servers 1 and 3
  EXPECT_EQ(p->home[0], t.accelerator_nic[1][1]);
  EXPECT_EQ(p->home[1], t.accelerator_nic[3][1]);
  c.servers = 3;  // 1, 3, 5: the spec has 4
  EXPECT_EQ(place(c, t).error().message, "ranks.servers: 3 from server 1 every 2 is more than the spec's 4");
}

TEST(CollectiveReplay, RingOnOwnRailsRunsNearTheNicsSpeed) {
  // One rank per server on NIC 0: a ring on one rail, nothing else on the fabric. Each
  // rank sends 2(n-1)/n of the buffer through a 100 Gbit/s NIC.
  SimTopology t = rails4x2();
  CollectiveOptions c = options(Collective::kAllReduce, Algorithm::kRing, 16 << 20);
  c.per_server = 1;
  std::vector<FlowSpec> flows;
  Result<CollectiveReplay> r = replay_collective(c, t, {}, flows);
  ASSERT_TRUE(r) << r.error().message;
  std::unique_ptr<CongestionControl> cc;
  auto net = run(t, flows, cc);
  std::vector<CollectiveResult> res = collective_results(net->outcomes(), {*r});
  ASSERT_EQ(res[0].finished, res[0].flows);
  // The bytes on the wire, headers included, at line rate; then a pipeline's fill and drain.
  const double ideal_us = 2.0 * 3 / 4 * double(16 << 20) / (100e3 / 8) / test::payload_fraction(NetConfig{});
  EXPECT_GT(res[0].time_us, ideal_us);
  EXPECT_LT(res[0].time_us, ideal_us * 1.12);
  EXPECT_NEAR(res[0].busbw_gbs, 2.0 * 3 / 4 * double(16 << 20) / (res[0].time_us * 1e3), 1e-3);
}

TEST(CollectiveReplay, HierarchicalBeatsAFlatRingOnAnOversubscribedSpine) {
  SimTopology t = rails4x2(2);
  auto time_of = [&](Algorithm a) {
    std::vector<FlowSpec> flows;
    Result<CollectiveReplay> r = replay_collective(options(Collective::kAllReduce, a), t, {}, flows);
    EXPECT_TRUE(r);
    std::unique_ptr<CongestionControl> cc;
    auto net = run(t, flows, cc);
    return collective_results(net->outcomes(), {*r})[0].time_us;
  };
  EXPECT_LT(time_of(Algorithm::kHierarchical) * 2, time_of(Algorithm::kRing));
}

TEST(CollectiveReplay, FlowEngineAgreesWithPacketsAndCollectivesRunAfterOneAnother) {
  // Hierarchical all-reduce, then a PXN all-to-all after it, on the 2:1 spine.
  SimTopology t = rails4x2(2);
  std::vector<FlowSpec> flows;
  Result<CollectiveReplay> first = replay_collective(options(Collective::kAllReduce, Algorithm::kHierarchical), t, {}, flows);
  ASSERT_TRUE(first);
  CollectiveOptions c = options(Collective::kAllToAll, Algorithm::kPxn);
  c.name = "second";
  Result<CollectiveReplay> second = replay_collective(c, t, first->last_flows, flows);
  ASSERT_TRUE(second);
  std::unique_ptr<CongestionControl> cc;
  std::vector<CollectiveResult> packets = collective_results(run(t, flows, cc)->outcomes(), {*first, *second});
  FluidNetwork fluid(t, NetConfig{}, 1);
  for (const FlowSpec& f : flows) ASSERT_TRUE(fluid.add_flow(f));
  fluid.run(Time::seconds(1));
  std::vector<CollectiveResult> fair = collective_results(fluid.outcomes(), {*first, *second});
  for (const std::vector<CollectiveResult>* r : {&packets, &fair}) {
    ASSERT_EQ((*r)[1].finished, (*r)[1].flows);
    EXPECT_GE((*r)[1].start_us, (*r)[0].end_us);
  }
  for (int k = 0; k < 2; ++k) EXPECT_NEAR(fair[k].time_us, packets[k].time_us, 0.05 * packets[k].time_us) << k;
}

TEST(CollectiveReplay, TreesRunInBothEnginesAndKeepHierarchicalTrafficOnItsRail) {
  SimTopology t = rails4x2();
  for (Algorithm a : {Algorithm::kTree, Algorithm::kHierarchicalTree}) {
    std::vector<FlowSpec> flows;
    Result<CollectiveReplay> r = replay_collective(options(Collective::kAllReduce, a), t, {}, flows);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->algorithm, sched::to_string(a));
    for (size_t i = 0; i < flows.size(); ++i) {
      if (a == Algorithm::kHierarchicalTree && flows[i].bytes > 0 && t.server[flows[i].src] != t.server[flows[i].dst]) {
        EXPECT_EQ(t.rail[flows[i].src], t.rail[flows[i].dst]);
      }
    }
    std::unique_ptr<CongestionControl> cc;
    const double packets = collective_results(run(t, flows, cc)->outcomes(), {*r})[0].time_us;
    FluidNetwork fluid(t, NetConfig{}, 1);
    for (const FlowSpec& f : flows) ASSERT_TRUE(fluid.add_flow(f));
    fluid.run(Time::seconds(1));
    const CollectiveResult fair = collective_results(fluid.outcomes(), {*r})[0];
    ASSERT_EQ(fair.finished, fair.flows);
    EXPECT_NEAR(fair.time_us, packets, 0.1 * packets) << r->algorithm;
  }
}

TEST(CollectiveReplay, TheTunerPicksForTheFabric) {
  SimTopology thin = rails4x2(2);
  std::vector<FlowSpec> flows;
  EXPECT_EQ(replay_collective(options(Collective::kAllReduce, Algorithm::kDefault), thin, {}, flows)->algorithm,
            "hierarchical");
  EXPECT_EQ(replay_collective(options(Collective::kAllToAll, Algorithm::kDefault), thin, {}, flows)->algorithm, "pxn");
}

namespace fs = std::filesystem;

// The error a scenario with this traffic gets, from parsing or from making its flows.
std::string error_of(const std::string& traffic) {
  const fs::path dir = fs::temp_directory_path() / ("xm_collective_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "r.yaml") << "name: r\nservers: 4\nserver: {accelerators: 2, nics: 2, nic_gbps: 100}\n"
                                   "fabric:\n  kind: rail-optimized\n  tor: {ports: 8, servers: 4, uplinks: 4}\n"
                                   "  agg: {ports: 4, tors: 2, count: 2, link: {gbps: 100, latency_ns: 1000}}\n";
  const std::string path = (dir / "s.yaml").string();
  Result<Scenario> s = parse_scenario("topology: {spec: r.yaml}\ntraffic:\n" + traffic, path);
  std::string out;
  if (!s) {
    out = s.error().message;
  } else {
    Result<SimTopology> t = scenario_topology(*s);
    Result<Traffic> flows = t ? scenario_flows(*s, *t) : Result<Traffic>(t.error());
    out = flows ? "" : flows.error().message;
  }
  fs::remove_all(dir);
  return out.empty() ? out : out.substr(out.find("s.yaml") + 6);
}

TEST(CollectiveScenario, ErrorsNameTheFieldAndWhatTheSpecLacks) {
  EXPECT_EQ(error_of("  - collective: {op: all_sum}\n"),
            ":3:22: traffic[0].collective.op: expected all_reduce, all_gather, reduce_scatter, alltoall, broadcast or reduce, got \"all_sum\"");
  EXPECT_EQ(error_of("  - collective: {op: alltoall, algorithm: hierarchical}\n"),
            ":3:43: traffic[0].collective.algorithm: alltoall:hierarchical: hierarchical does not run alltoall (or auto)");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, bytes: 16Q}\n"),
            ":3:41: traffic[0].collective.bytes: expected a whole number, got \"16Q\"");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, type: float128}\n"),
            ":3:40: traffic[0].collective.type: expected int8, uint8, int32, int64, half, bfloat16, float or double, got \"float128\"");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, after: warmup}\n"),
            ":3:41: traffic[0].collective.after: \"warmup\" names no collective listed before this one");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, rails: some}\n"),
            ":3:41: traffic[0].collective.rails: expected own, all or a list of rails, got \"some\"");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, ranks: {servers: 8}}\n"),
            ": traffic[0].collective: ranks.servers: 8 from server 0 is more than the spec's 4");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, ranks: {per_server: 4}}\n"),
            ": traffic[0].collective: ranks.per_server: 4 from accelerator 0 is more than a server's 2");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, rails: [0, 3]}\n"),
            ": traffic[0].collective: rails: rail 3: no NIC of server 0 is on it");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, ranks: {servers: 1, per_server: 1}}\n"),
            ": traffic[0].collective: ranks: a collective needs at least 2 ranks");
  EXPECT_EQ(error_of("  - collective: {op: all_reduce, bytes: 4}\n  - collective: {op: all_gather, after: collective0}\n"), "");
}

}  // namespace
}  // namespace xm::sim
