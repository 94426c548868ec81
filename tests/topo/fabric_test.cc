// The builder wires what the spec says: counts, degrees, speeds, names.
#include "topo/fabric.h"

#include <gtest/gtest.h>

#include "test_fabrics.h"

#include <set>

#include "topo/generate.h"
#include "topo/spec_io.h"

namespace xm::topo {
namespace {

using test_support::build;
using test_support::example;
using test_support::example_spec;

size_t neighbours_of_kind(const Fabric& f, NodeId id, NodeKind kind) {
  size_t n = 0;
  for (LinkId l : f.links_of(id)) n += f.node(f.other_end(l, id)).kind == kind;
  return n;
}

TEST(Fabric, HpccFatTreeHasThePapersSwitchCounts) {
  Fabric f = example("hpcc-fat-tree-320.yaml");
  EXPECT_EQ(f.count(NodeKind::kAccelerator), 320u);
  EXPECT_EQ(f.count(NodeKind::kTor), 20u);
  EXPECT_EQ(f.count(NodeKind::kAgg), 20u);
  EXPECT_EQ(f.count(NodeKind::kCore), 16u);
  for (NodeId t = f.first(NodeKind::kTor); t < f.first(NodeKind::kTor) + 20; ++t) {
    EXPECT_EQ(neighbours_of_kind(f, t, NodeKind::kNic), 16u);
    EXPECT_EQ(neighbours_of_kind(f, t, NodeKind::kAgg), 4u);
  }
  for (NodeId c = f.first(NodeKind::kCore); c < f.first(NodeKind::kCore) + 16; ++c)
    EXPECT_EQ(neighbours_of_kind(f, c, NodeKind::kAgg), 5u) << "one agg per pod";
  for (LinkId l = 0; l < f.link_count(); ++l) {
    const Link& link = f.link(l);
    NodeKind upper = f.node(link.b).kind;
    if (upper == NodeKind::kTor) {
      EXPECT_EQ(link.gbps, 100);
    } else if (upper == NodeKind::kAgg || upper == NodeKind::kCore) {
      EXPECT_EQ(link.gbps, 400);
    }
  }
}

TEST(Fabric, NoSwitchUsesMorePortsThanItHas) {
  GenOptions o;
  o.gpus = 16384;
  Fabric f = build(generate(o).value());
  const FabricSpec& fs = f.spec().fabric;
  auto check = [&](NodeKind kind, uint32_t ports) {
    for (NodeId id = f.first(kind); id < f.first(kind) + f.count(kind); ++id)
      ASSERT_LE(f.links_of(id).size(), ports) << f.name(id);
  };
  check(NodeKind::kTor, fs.tor.ports);
  check(NodeKind::kAgg, fs.agg->ports);
  check(NodeKind::kCore, fs.core->ports);
}

TEST(Fabric, RailOptimizedPutsNicIOfASegmentOnRailIsTor) {
  Fabric f = build(default_spec());
  const uint32_t segment_servers = f.spec().fabric.tor.servers;
  for (uint32_t srv = 0; srv < f.spec().servers; ++srv)
    for (uint32_t n = 0; n < 8; ++n) {
      NodeId nic = f.nic(srv, n);
      ASSERT_EQ(neighbours_of_kind(f, nic, NodeKind::kTor), 1u);
      NodeId tor = f.other_end(f.links_of(nic).back(), nic);
      EXPECT_EQ(f.name(tor), "tor-s" + std::to_string(srv / segment_servers) + "-r" + std::to_string(n));
    }
}

TEST(Fabric, DualHomedNicsReachTwoTorsOfTheirRail) {
  ClusterSpec spec = default_spec();
  spec.server.nic_ports = 2;
  spec.fabric.tor.servers = 32;
  spec.fabric.tor.uplinks = 32;
  spec.fabric.agg->tors = 64;
  spec.fabric.agg->count = 16;
  Fabric f = build(spec);
  NodeId nic = f.nic(5, 3);
  std::set<std::string> tors;
  for (LinkId l : f.links_of(nic)) {
    NodeId peer = f.other_end(l, nic);
    if (f.node(peer).kind == NodeKind::kTor) {
      tors.insert(f.name(peer));
      EXPECT_EQ(f.link(l).gbps, 200) << "a 400 Gbit/s NIC's two ports run at 200";
    }
  }
  EXPECT_EQ(tors, (std::set<std::string>{"tor-s0-r3a", "tor-s0-r3b"}));
}

TEST(Fabric, PlanesAreIndependent) {
  Fabric f = example("hpn-dual-plane.yaml");
  for (LinkId l = 0; l < f.link_count(); ++l) {
    const Node &a = f.node(f.link(l).a), &b = f.node(f.link(l).b);
    if (is_fabric_switch(a.kind) && is_fabric_switch(b.kind)) {
      EXPECT_EQ(a.plane, b.plane);
    }
  }
  NodeId nic = f.nic(0, 0);
  std::set<uint8_t> planes;
  for (LinkId l : f.links_of(nic)) {
    NodeId peer = f.other_end(l, nic);
    if (f.node(peer).kind == NodeKind::kTor) planes.insert(f.node(peer).plane);
  }
  EXPECT_EQ(planes, (std::set<uint8_t>{0, 1}));
}

TEST(Fabric, FrontEndIsApartFromTheBackEnd) {
  ClusterSpec spec = default_spec();
  spec.frontend = FrontendSpec{};
  Fabric f = build(spec);
  EXPECT_EQ(f.count(NodeKind::kFrontNic), spec.servers);
  EXPECT_EQ(f.count(NodeKind::kFrontTor), 4u);  // 128 servers, 32 a ToR
  for (NodeId g = f.first(NodeKind::kAccelerator); g < f.first(NodeKind::kAccelerator) + 16; ++g) {
    EXPECT_EQ(neighbours_of_kind(f, g, NodeKind::kHost), 0u);
    EXPECT_EQ(neighbours_of_kind(f, g, NodeKind::kFrontNic), 0u);
  }
}

TEST(Fabric, FewerNicsThanAcceleratorsShareThemEvenly) {
  ClusterSpec spec = default_spec();
  spec.server.nics = uniform_nics(4, 400);
  spec.fabric.tor.uplinks = 64;
  Fabric f = build(spec);
  for (uint32_t g = 0; g < 8; ++g) EXPECT_EQ(f.nic_of(f.accelerator(0, g)), f.nic(0, g / 2));
}

TEST(Fabric, EveryNameFindsItsNode) {
  for (const char* file : {"hpcc-fat-tree-320.yaml", "hpn-dual-plane.yaml"}) {
    Fabric f = example(file);
    std::set<std::string> names;
    for (NodeId id = 0; id < f.node_count(); ++id) {
      std::string name = f.name(id);
      EXPECT_TRUE(names.insert(name).second) << "duplicate " << name;
      if (id % 13 == 0 || f.node(id).kind == NodeKind::kCore) {  // find() scans: sample
        Result<NodeId> found = f.find(name);
        ASSERT_TRUE(found.ok()) << name;
        EXPECT_EQ(*found, id) << name;
      }
    }
  }
}

TEST(Fabric, FindAcceptsGlobalIndicesAndRejectsStrangers) {
  Fabric f = build(default_spec());
  EXPECT_EQ(f.find("gpu12").value(), f.accelerator(1, 4));
  EXPECT_EQ(f.find("12").value(), f.accelerator(1, 4));
  EXPECT_EQ(f.find("srv1/gpu4").value(), f.accelerator(1, 4));
  EXPECT_FALSE(f.find("gpu1024").ok());
  EXPECT_FALSE(f.find("srv128/gpu0").ok());
  EXPECT_FALSE(f.find("srv1/gpu8").ok());
  EXPECT_FALSE(f.find("nothing").ok());
}

TEST(Fabric, InvalidSpecIsAnErrorNotACrash) {
  ClusterSpec spec = default_spec();
  spec.fabric.tor.ports = 8;
  Result<Fabric> f = build_fabric(spec);
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message.find("fabric.tor.ports"), std::string::npos);
}

}  // namespace
}  // namespace xm::topo
