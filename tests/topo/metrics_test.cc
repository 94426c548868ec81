#include "topo/metrics.h"

#include <gtest/gtest.h>

#include "test_fabrics.h"

#include "topo/generate.h"
#include "topo/spec_io.h"

namespace xm::topo {
namespace {

using test_support::build;
using test_support::example;
using test_support::example_spec;

TEST(Metrics, HpccFatTree) {
  Summary s = summarize(example("hpcc-fat-tree-320.yaml"));
  EXPECT_EQ(s.servers, 320u);
  EXPECT_EQ(s.tiers, 3u);
  EXPECT_DOUBLE_EQ(s.host_gbps, 32000);
  EXPECT_DOUBLE_EQ(s.bisection_gbps, 16000);
  EXPECT_DOUBLE_EQ(s.tiers_detail[0].oversubscription, 1.0);  // 16 × 100 down, 4 × 400 up
  EXPECT_DOUBLE_EQ(s.tiers_detail[1].oversubscription, 1.0);
  EXPECT_EQ(s.ecmp_paths, 16u);
  EXPECT_EQ(s.host_links, 320u);
}

TEST(Metrics, OversubscribedAggTierLimitsBisection) {
  Result<ClusterSpec> spec = parse_spec(R"(
servers: 512
server: {accelerators: 8, nics: 8, nic_gbps: 400}
fabric:
  kind: rail-optimized
  tor: {ports: 64, servers: 32, uplinks: 32}
  agg: {ports: 64, tors: 32, count: 32, oversubscription: 4}
  core: {ports: 64, count: 256}
)", "agg-over.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->fabric.agg->uplinks, 8u);
  Summary s = summarize(build(*spec));
  EXPECT_DOUBLE_EQ(s.tiers_detail[0].oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(s.tiers_detail[1].oversubscription, 4.0);
  EXPECT_DOUBLE_EQ(s.bisection_gbps, s.host_gbps / 4 / 2);
}

TEST(Metrics, RailAlignedRingStaysInTheRailAndShiftedOneDoesNot) {
  Fabric f = build(default_spec());  // 2 segments of 64 servers
  const uint32_t servers = 128, gpus = 8;
  // Ring of accelerators with local index g through all servers (one ring per rail),
  // as rail-aware all-reduce runs it: every step stays on rail g.
  std::vector<Demand> rail_rings, crossed;
  for (uint32_t g = 0; g < gpus; ++g)
    for (uint32_t s = 0; s < 64; ++s) {  // inside segment 0
      uint32_t next = (s + 1) % 64;
      rail_rings.push_back({s * gpus + g, next * gpus + g, 1.0});
      crossed.push_back({s * gpus + g, next * gpus + (g + 1) % gpus, 1.0});
    }
  TrafficShare aligned = classify_traffic(f, rail_rings);
  EXPECT_DOUBLE_EQ(aligned.rail_share(), 1.0);
  EXPECT_DOUBLE_EQ(aligned.cross, 0);
  TrafficShare shifted = classify_traffic(f, crossed);
  EXPECT_DOUBLE_EQ(shifted.rail_share(), 0.0);
  // A flat ring over every accelerator in rank order: 7 of 8 steps inside a server.
  std::vector<Demand> flat;
  for (uint32_t r = 0; r < servers * gpus; ++r) flat.push_back({r, (r + 1) % (servers * gpus), 1.0});
  TrafficShare ring = classify_traffic(f, flat);
  EXPECT_DOUBLE_EQ(ring.intra_server, servers * 7.0);
  EXPECT_DOUBLE_EQ(ring.one_tor_hop + ring.cross, servers * 1.0);
}

TEST(Metrics, DemandsOutOfRangeAreIgnored) {
  Fabric f = build(default_spec());
  TrafficShare t = classify_traffic(f, {{0, 5000, 1.0}, {7, 7, 1.0}});
  EXPECT_DOUBLE_EQ(t.intra_server + t.one_tor_hop + t.cross, 0);
}

}  // namespace
}  // namespace xm::topo
