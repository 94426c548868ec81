#include "topo/generate.h"

#include <gtest/gtest.h>

#include "topo/fabric.h"
#include "topo/metrics.h"

namespace xm::topo {
namespace {

Summary summary_of(const GenOptions& o) {
  Result<ClusterSpec> spec = generate(o);
  EXPECT_TRUE(spec.ok()) << (spec ? "" : spec.error().message);
  Result<Fabric> f = build_fabric(*spec);
  EXPECT_TRUE(f.ok()) << (f ? "" : f.error().message);
  return summarize(*f);
}

TEST(Generate, HundredThousandGpusOnEightRails) {
  GenOptions o;
  o.gpus = 102400;
  o.rails = 8;
  Summary s = summary_of(o);
  EXPECT_EQ(s.servers, 12800u);
  EXPECT_EQ(s.accelerators, 102400u);
  EXPECT_DOUBLE_EQ(s.server_gbps, 3200);
  EXPECT_EQ(s.tiers, 3u);
  for (const TierSummary& t : s.tiers_detail)
    if (t.up_gbps > 0) {
      EXPECT_DOUBLE_EQ(t.oversubscription, 1.0) << t.name;
    }
  EXPECT_DOUBLE_EQ(s.bisection_gbps, s.host_gbps / 2);
  EXPECT_DOUBLE_EQ(s.host_gbps, 12800 * 3200.0);
}

TEST(Generate, DefaultIsTwoTierNonBlocking) {
  Summary s = summary_of(GenOptions{});
  EXPECT_EQ(s.accelerators, 1024u);
  EXPECT_EQ(s.tiers, 2u);
  EXPECT_EQ(s.rails, 8u);
  EXPECT_DOUBLE_EQ(s.tiers_detail[0].oversubscription, 1.0);
}

TEST(Generate, StatedOversubscriptionAtTheTor) {
  GenOptions o;
  o.gpus = 3072;  // 384 servers: four full segments of 96 (a partial one would dilute the ratio)
  o.oversubscription = 3;
  Summary s = summary_of(o);
  EXPECT_DOUBLE_EQ(s.tiers_detail[0].oversubscription, 3.0);
  EXPECT_DOUBLE_EQ(s.bisection_gbps, s.host_gbps / 3 / 2);
}

TEST(Generate, ConventionalClosPutsAServersNicsUnderOneTor) {
  GenOptions o;
  o.gpus = 512;
  o.kind = FabricKind::kClos;
  Result<ClusterSpec> spec = generate(o);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  Result<Fabric> f = build_fabric(*spec);
  ASSERT_TRUE(f.ok());
  NodeId tor = f->other_end(f->links_of(f->nic(0, 0)).back(), f->nic(0, 0));
  for (uint32_t n = 0; n < 8; ++n) {
    NodeId nic = f->nic(0, n);
    EXPECT_EQ(f->other_end(f->links_of(nic).back(), nic), tor) << "NIC " << n;
  }
}

TEST(Generate, DualPlaneSplitsEachNicsPortsOverThePlanes) {
  GenOptions o;
  o.gpus = 2048;
  o.nic_ports = 2;
  o.planes = 2;
  Summary s = summary_of(o);
  EXPECT_EQ(s.planes, 2u);
  EXPECT_DOUBLE_EQ(s.server_gbps, 3200);
  EXPECT_DOUBLE_EQ(s.host_gbps, 256 * 3200.0);
}

TEST(Generate, RefusesWhatCannotBeBuilt) {
  GenOptions o;
  o.gpus = 1001;  // not a multiple of 8
  EXPECT_FALSE(generate(o).ok());
  o = GenOptions{};
  o.gpus = 1 << 20;
  o.radix = 32;  // three tiers of radix 32 hold 8,192 NIC ports
  Result<ClusterSpec> s = generate(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("radix"), std::string::npos) << s.error().message;
  o = GenOptions{};
  o.gpus = 64;
  o.kind = FabricKind::kClos;
  o.nic_ports = 2;
  o.tiers = 1;  // a dual-homed server's two ToRs need a tier above them
  s = generate(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("fabric.agg"), std::string::npos) << s.error().message;
  o = GenOptions{};
  o.oversubscription = 0.5;
  EXPECT_FALSE(generate(o).ok());
}

TEST(Generate, EverySizeItAcceptsValidatesAndBuilds) {
  for (uint32_t gpus : {8u, 16u, 64u, 512u, 1024u, 8192u, 16384u, 65536u}) {
    for (FabricKind kind : {FabricKind::kRailOptimized, FabricKind::kClos}) {
      GenOptions o;
      o.gpus = gpus;
      o.kind = kind;
      Result<ClusterSpec> spec = generate(o);
      ASSERT_TRUE(spec.ok()) << gpus << " " << to_string(kind) << ": " << spec.error().message;
      EXPECT_TRUE(validate(*spec).empty());
      Result<Fabric> f = build_fabric(*spec);
      ASSERT_TRUE(f.ok());
      EXPECT_EQ(f->count(NodeKind::kAccelerator), gpus);
    }
  }
}

}  // namespace
}  // namespace xm::topo
