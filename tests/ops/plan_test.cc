// The plan as data: every cable and port accounted for, addresses as documented and
// unique, names as documented, errors that name the field.
#include "ops/fabric_plan.h"

#include <gtest/gtest.h>

#include <set>

#include "ops/render.h"
#include "ops/test_specs.h"

namespace xm::ops {
namespace {

FabricPlan plan_of(const topo::ClusterSpec& spec, PlanOptions options = {}) {
  Result<FabricPlan> plan = make_plan(spec, options);
  EXPECT_TRUE(plan.ok()) << (plan.ok() ? "" : plan.error().message);
  return plan.ok() ? std::move(plan).value() : FabricPlan{};
}

TEST(OpsPlan, EveryPortHasExactlyOneCableAndItsPeerPointsBack) {
  FabricPlan plan = plan_of(ops_test::rail_spec(16, 8, 2));
  EXPECT_EQ(plan.of_role(Role::kHost).size(), 16u);
  EXPECT_EQ(plan.of_role(Role::kTor).size(), 8u);
  EXPECT_EQ(plan.of_role(Role::kSpine).size(), 2u);
  EXPECT_EQ(plan.cables.size(), 16u * 8 + 8 * 2);
  std::set<Endpoint> ends;
  for (const Cable& c : plan.cables) {
    EXPECT_TRUE(ends.insert(c.a).second) << c.a.device << ":" << c.a.port;
    EXPECT_TRUE(ends.insert(c.b).second) << c.b.device << ":" << c.b.port;
    const Port* a = plan.find(c.a.device)->find_port(c.a.port);
    const Port* b = plan.find(c.b.device)->find_port(c.b.port);
    ASSERT_TRUE(a && b);
    EXPECT_EQ((Endpoint{a->peer_device, a->peer_port}), c.b);
    EXPECT_EQ((Endpoint{b->peer_device, b->peer_port}), c.a);
  }
  size_t ports = 0;
  for (const Device& d : plan.devices) ports += d.ports.size();
  EXPECT_EQ(ports, 2 * plan.cables.size());
}

TEST(OpsPlan, RailNicsLandOnTheirRailsToRWithTheDocumentedAddresses) {
  FabricPlan plan = plan_of(ops_test::rail_spec(4, 2, 2));
  const Device* h3 = plan.find("h3");
  ASSERT_TRUE(h3);
  const Port* nic1 = h3->find_port("nic1");
  ASSERT_TRUE(nic1);
  EXPECT_EQ(nic1->peer_device, "tor1");
  EXPECT_EQ(nic1->peer_port, "h3-nic1");
  EXPECT_EQ(nic1->rail, 1u);
  EXPECT_EQ(to_string(*nic1->address), "10.77.1.4/24");
  const Device* tor1 = plan.find("tor1");
  EXPECT_EQ(tor1->rail, 1u);
  EXPECT_EQ(to_string(tor1->subnet->prefix), "10.77.1.0/24");
  EXPECT_EQ(to_string(tor1->subnet->gateway), "10.77.1.254");
  EXPECT_EQ(tor1->subnet->bridge, "rail1");
  EXPECT_NE(tor1->find_port("spine0"), nullptr);
  EXPECT_NE(plan.find("spine1")->find_port("tor1"), nullptr);
}

TEST(OpsPlan, AddressesAreUniqueAndFabricLinksShareA31) {
  FabricPlan plan = plan_of(ops_test::rail_spec(16, 8, 2));
  std::set<Ipv4> seen;
  for (const Device& d : plan.devices) {
    if (d.role != Role::kHost) {
      EXPECT_TRUE(seen.insert(d.loopback).second) << d.name;
    }
    if (d.subnet) {
      EXPECT_TRUE(seen.insert(d.subnet->gateway).second) << d.name;
    }
    for (const Port& p : d.ports) {
      if (p.address) {
        EXPECT_TRUE(seen.insert(p.address->base).second) << d.name << ":" << p.name;
      }
    }
  }
  for (const Cable& c : plan.cables) {
    const Port* a = plan.find(c.a.device)->find_port(c.a.port);
    const Port* b = plan.find(c.b.device)->find_port(c.b.port);
    if (c.tier == 0) {
      EXPECT_TRUE(plan.find(c.b.device)->subnet->prefix.contains(a->address->base));
      continue;
    }
    ASSERT_TRUE(a->address && b->address);
    EXPECT_EQ(a->address->length, 31);
    EXPECT_EQ(a->address->base.value % 2, 0u);
    EXPECT_EQ(b->address->base.value, a->address->base.value + 1);
  }
}

TEST(OpsPlan, EveryToRHasItsOwnAsnAndTheSpinesShareOne) {
  FabricPlan plan = plan_of(ops_test::rail_spec(4, 4, 2));
  std::set<uint32_t> tor_asns;
  for (const Device* t : plan.of_role(Role::kTor)) EXPECT_TRUE(tor_asns.insert(t->asn).second);
  std::vector<const Device*> spines = plan.of_role(Role::kSpine);
  ASSERT_EQ(spines.size(), 2u);
  EXPECT_EQ(spines[0]->asn, spines[1]->asn);
  EXPECT_EQ(tor_asns.count(spines[0]->asn), 0u);
  for (const Device* d : plan.of_role(Role::kSpine)) EXPECT_GE(d->asn, 4200000000u);
  for (const Device* d : plan.of_role(Role::kTor)) EXPECT_GE(d->asn, 4200000000u);
}

TEST(OpsPlan, PlanesSegmentsAndPodsGetPrefixedUniqueNames) {
  Result<topo::ClusterSpec> spec = topo::load_spec(XM_EXAMPLES_DIR "/hpn-dual-plane.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  FabricPlan plan = plan_of(*spec);
  std::set<std::string> names;
  for (const Device& d : plan.devices) {
    EXPECT_TRUE(names.insert(d.name).second) << d.name;
    std::set<std::string> ports;
    for (const Port& p : d.ports) EXPECT_TRUE(ports.insert(p.name).second) << d.name << ":" << p.name;
  }
  EXPECT_TRUE(plan.find("p1-s1-tor3"));
  EXPECT_TRUE(plan.find("p0-spine14"));
  const Port* p = plan.find("h200")->find_port("nic2p1");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->peer_device, "p1-s1-tor2");
}

TEST(OpsPlan, AHostWithTwoNicsOnOneRailGetsATableForEach) {
  topo::ClusterSpec spec = ops_test::rail_spec(2, 2, 0);
  spec.server.nics[1].rail = 0;
  spec.fabric.tor.ports = 4;
  FabricPlan plan = plan_of(spec);
  std::vector<HostNic> nics = host_nics(plan, *plan.find("h0"));
  ASSERT_EQ(nics.size(), 2u);
  EXPECT_NE(nics[0].table, nics[1].table);
  EXPECT_NE(nics[0].rule_priority, nics[1].rule_priority);
  EXPECT_EQ(nics[0].subnet, nics[1].subnet);  // one ToR for the rail
}

TEST(OpsPlan, ASpecThePlanCannotWireNamesTheField) {
  topo::ClusterSpec spec = ops_test::rail_spec(16, 8, 2);
  spec.fabric.tor.ports = 16;  // 16 hosts + 2 uplinks do not fit
  Result<FabricPlan> plan = make_plan(spec, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("fabric.tor.ports"), std::string::npos) << plan.error().message;

  spec = ops_test::rail_spec(16, 8, 2);
  spec.fabric.agg->ports = 4;  // 8 ToRs cannot reach a 4-port spine
  plan = make_plan(spec, {});
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("fabric.agg"), std::string::npos) << plan.error().message;
}

TEST(OpsPlan, HostSubnetsThatOverflowTenSlashEightAreRefused) {
  // 64 ToRs of 2,046 hosts each: a /20 per ToR, 262,144 addresses, 4 second octets.
  topo::ClusterSpec spec = ops_test::rail_spec(2046, 64, 0);
  PlanOptions options;
  options.subnet = 252;  // 10.252-10.255: fits
  Result<FabricPlan> plan = make_plan(spec, options);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(to_string(plan->find("tor63")->subnet->prefix), "10.255.240.0/20");
  EXPECT_EQ(to_string(plan->find("tor63")->subnet->gateway), "10.255.255.254");
  options.subnet = 253;  // past 10.255.255.255
  plan = make_plan(spec, options);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("subnet octet"), std::string::npos) << plan.error().message;
}

TEST(OpsPlan, BadOptionsNameTheOption) {
  topo::ClusterSpec spec = ops_test::rail_spec(2, 2, 2);
  PlanOptions o;
  o.mtu = 100;
  Result<FabricPlan> plan = make_plan(spec, o);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("--mtu"), std::string::npos);
  o = {};
  o.qos.pfc_priority = 9;
  plan = make_plan(spec, o);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.error().message.find("--pfc-priority"), std::string::npos);
}

TEST(OpsPlan, ThreeTierFabricsCableEveryTier) {
  topo::ClusterSpec spec = ops_test::rail_spec(8, 2, 2);
  spec.fabric.tor.servers = 4;  // 2 segments
  spec.fabric.tor.ports = 6;
  spec.fabric.agg->tors = 2;    // 2 pods
  spec.fabric.agg->uplinks = 2;
  spec.fabric.agg->ports = 4;
  topo::CoreTier core;
  core.count = 4;
  core.ports = 2;
  spec.fabric.core = core;
  FabricPlan plan = plan_of(spec);
  size_t tiers[3] = {};
  for (const Cable& c : plan.cables) ++tiers[c.tier];
  EXPECT_EQ(tiers[0], 16u);
  EXPECT_EQ(tiers[1], 4u * 2);
  EXPECT_EQ(tiers[2], 4u * 2);
  EXPECT_TRUE(plan.find("s1-tor0"));
  EXPECT_TRUE(plan.find("pod1-spine1"));
  EXPECT_TRUE(plan.find("core3"));
  EXPECT_EQ(plan.find("core0")->asn, 4200000000u);
}

TEST(OpsPlan, Ipv4TextRoundTripsAndRejectsWhatIsNotAnAddress) {
  for (const char* text : {"0.0.0.0", "10.77.3.254", "255.255.255.255"})
    EXPECT_EQ(to_string(*parse_ipv4(text)), text);
  for (const char* bad : {"", "1.2.3", "1.2.3.4.5", "256.1.1.1", "01.2.3.4", "1.2.3.-4", "a.b.c.d", "1..2.3"})
    EXPECT_FALSE(parse_ipv4(bad)) << bad;
  EXPECT_EQ(to_string(*parse_prefix("10.0.0.0/31")), "10.0.0.0/31");
  EXPECT_FALSE(parse_prefix("10.0.0.0/33"));
  EXPECT_FALSE(parse_prefix("10.0.0.0"));
}

}  // namespace
}  // namespace xm::ops
