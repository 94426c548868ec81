#include "topo/paths.h"

#include <gtest/gtest.h>

#include "test_fabrics.h"

#include "topo/generate.h"
#include "topo/spec_io.h"

namespace xm::topo {
namespace {

using test_support::build;
using test_support::example;
using test_support::example_spec;

std::vector<std::string> names(const Fabric& f, const std::vector<NodeId>& path) {
  std::vector<std::string> out;
  for (NodeId n : path) out.push_back(f.name(n));
  return out;
}

TEST(Paths, SameLocalIndexInOneSegmentIsOneTorHop) {
  Fabric f = build(default_spec());
  NodeId a = f.accelerator(0, 3), b = f.accelerator(17, 3);  // segment 0 holds servers 0-63
  Result<PathSet> p = equal_cost_paths(f, a, b);
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->paths, 1u);
  EXPECT_EQ(p->switches, 1u);
  ASSERT_EQ(p->examples.size(), 1u);
  EXPECT_EQ(names(f, p->examples[0]),
            (std::vector<std::string>{"srv0/gpu3", "srv0/nic3", "tor-s0-r3", "srv17/nic3", "srv17/gpu3"}));
  EXPECT_TRUE(one_tor_hop(f, a, b));
}

TEST(Paths, DifferentRailsClimbAboveTheTor) {
  Fabric f = build(default_spec());
  NodeId a = f.accelerator(0, 3), b = f.accelerator(17, 4);
  Result<PathSet> p = equal_cost_paths(f, a, b);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->switches, 3u);  // ToR, agg, ToR
  EXPECT_FALSE(one_tor_hop(f, a, b));
  EXPECT_EQ(p->paths, f.spec().fabric.agg->count) << "one path through each agg of the pod";
  for (const auto& path : p->examples) {
    EXPECT_EQ(f.name(path[2]), "tor-s0-r3");
    EXPECT_EQ(f.node(path[3]).kind, NodeKind::kAgg);
    EXPECT_EQ(f.name(path[4]), "tor-s0-r4");
  }
}

TEST(Paths, SameRailOtherSegmentAlsoClimbs) {
  Fabric f = build(default_spec());
  NodeId a = f.accelerator(0, 3), b = f.accelerator(64, 3);  // segment 1
  EXPECT_FALSE(one_tor_hop(f, a, b));
  EXPECT_EQ(equal_cost_paths(f, a, b).value().switches, 3u);
}

TEST(Paths, ConventionalClosJoinsEveryNicOfASegment) {
  GenOptions o;
  o.gpus = 512;
  o.kind = FabricKind::kClos;
  Fabric f = build(generate(o).value());
  NodeId a = f.accelerator(0, 3), b = f.accelerator(1, 4);
  EXPECT_TRUE(one_tor_hop(f, a, b)) << "servers 0 and 1 share a ToR";
  EXPECT_EQ(equal_cost_paths(f, a, b).value().switches, 1u);
}

TEST(Paths, HpccFatTreeCountsMatchTheStructure) {
  Fabric f = example("hpcc-fat-tree-320.yaml");
  // Same pod (ToRs 0 and 1): 4 aggs. Different pods: 4 aggs × 4 cores of each group.
  EXPECT_EQ(equal_cost_paths(f, f.accelerator(0, 0), f.accelerator(16, 0)).value().paths, 4u);
  Result<PathSet> far = equal_cost_paths(f, f.accelerator(0, 0), f.accelerator(319, 0));
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(far->paths, 16u);
  EXPECT_EQ(far->switches, 5u);
  EXPECT_EQ(far->latency_ns, 2 * 100u + 6 * 1000u);  // two PCIe hops, six 1 us links
  EXPECT_EQ(far->bottleneck_gbps, 100);
}

TEST(Paths, ParallelLinksAreCountedApart) {
  Fabric f = build(default_spec());  // 8 aggs, 8 parallel links from each ToR to each
  Result<PathSet> p = equal_cost_paths(f, f.accelerator(0, 0), f.accelerator(0 + 64, 0), 0);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->paths, 8u);
  EXPECT_EQ(p->link_paths, 8u * 8 * 8);
  EXPECT_TRUE(p->examples.empty());
  EXPECT_EQ(p->switches, 3u) << "described even when no example path is kept";
  EXPECT_EQ(p->latency_ns, 2 * 100u + 2 * 500 + 2 * 1000);
}

TEST(Paths, SameServerMeetsAtTheIntraSwitch) {
  Fabric f = build(default_spec());
  Result<PathSet> p = equal_cost_paths(f, f.accelerator(2, 0), f.accelerator(2, 7));
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->switches, 0u);
  EXPECT_EQ(names(f, p->examples.at(0)), (std::vector<std::string>{"srv2/gpu0", "srv2/nvswitch", "srv2/gpu7"}));
  EXPECT_FALSE(one_tor_hop(f, f.accelerator(2, 0), f.accelerator(2, 7)));
}

TEST(Paths, RailOnlyFabricHasNoPathBetweenRails) {
  Result<ClusterSpec> spec = parse_spec(R"(
servers: 4
fabric: {kind: rail-optimized, tor: {ports: 8, servers: 4}}
)", "rail-only.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  Fabric f = build(*spec);
  EXPECT_TRUE(equal_cost_paths(f, f.accelerator(0, 1), f.accelerator(3, 1)).ok());
  Result<PathSet> p = equal_cost_paths(f, f.accelerator(0, 1), f.accelerator(3, 2));
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("no network path from srv0/gpu1 to srv3/gpu2"), std::string::npos);
}

TEST(Paths, BadEndpointsAreErrors) {
  Fabric f = build(default_spec());
  EXPECT_FALSE(equal_cost_paths(f, f.accelerator(0, 0), f.accelerator(0, 0)).ok());
  Result<PathSet> to_nic = equal_cost_paths(f, f.accelerator(0, 0), f.nic(1, 0));
  ASSERT_FALSE(to_nic.ok());
  EXPECT_EQ(to_nic.error().message, "srv1/nic0 is not an accelerator");
  EXPECT_FALSE(equal_cost_paths(f, f.accelerator(0, 0), NodeId(f.node_count())).ok());
}

TEST(Paths, HundredThousandGpuFarPairHasFullEcmp) {
  GenOptions o;
  o.gpus = 102400;
  Fabric f = build(generate(o).value());
  Result<PathSet> p = equal_cost_paths(f, f.accelerator(0, 0), f.accelerator(12799, 0), 2);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->switches, 5u);
  // 64 aggs above the ToR, then the 16 cores of that agg's group.
  EXPECT_EQ(p->paths, 64u * 16);
  EXPECT_EQ(p->examples.size(), 2u);
}

}  // namespace
}  // namespace xm::topo
