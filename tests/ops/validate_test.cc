// Validation as a pure function: a cluster observed exactly as planned passes; each kind
// of miswire and misconfiguration fails exactly the ports it touches, in words that say
// what to do.
#include "ops/validate.h"

#include <gtest/gtest.h>

#include <set>

#include "ops/test_specs.h"

namespace xm::ops {
namespace {

// What a perfectly deployed cluster shows: every port up with its planned address and
// MTU, LLDP naming the planned peer, every BGP session up, every route over every uplink.
Observation as_planned(const FabricPlan& plan) {
  Observation o;
  for (const Device& d : plan.devices) {
    DeviceView& v = o[d.name];
    v.interfaces["lo"] = Interface{true, true, 65536, {}, ""};
    if (d.role != Role::kHost) v.interfaces["lo"].addresses.push_back(Prefix{d.loopback, 32});
    if (d.subnet)
      v.interfaces[d.subnet->bridge] =
          Interface{true, true, plan.options.mtu, {Prefix{d.subnet->gateway, d.subnet->prefix.length}}, ""};
    for (const Port& p : d.ports) {
      Interface i{true, true, plan.options.mtu, {}, ""};
      if (p.address) i.addresses.push_back(*p.address);
      if (d.role == Role::kTor && !p.address) i.master = d.subnet->bridge;
      v.interfaces[p.name] = i;
      v.lldp[p.name] = Neighbour{p.peer_device, p.peer_port};
      if (d.role != Role::kHost && p.address) {
        const Port* far = plan.find(p.peer_device)->find_port(p.peer_port);
        v.bgp[to_string(far->address->base)] = "Established";
      }
    }
    if (d.role == Role::kTor)
      for (const Device* other : plan.of_role(Role::kTor)) {
        if (other == &d) continue;
        std::vector<std::string>& via = v.routes[to_string(other->subnet->prefix)];
        for (const Port& p : d.ports)
          if (p.address) via.push_back(p.name);
      }
  }
  return o;
}

std::set<std::string> failed_ports(const Report& r) {
  std::set<std::string> out;
  for (const PortReport& p : r.ports)
    if (!p.pass()) out.insert(p.device + ":" + p.port);
  return out;
}

std::string problems_of(const Report& r, const std::string& device, const std::string& port) {
  std::string out;
  for (const PortReport& p : r.ports)
    if (p.device == device && p.port == port)
      for (const std::string& s : p.problems) out += s + "\n";
  return out;
}

class Validate : public ::testing::Test {
 protected:
  Validate() : plan_(*make_plan(ops_test::rail_spec(4, 3, 2), {})), seen_(as_planned(plan_)) {}
  // Re-cables the ends of two planned cables as a technician swapping plugs at `a` and `b`.
  void swap_plugs(Endpoint a, Endpoint b) {
    const Port* pa = plan_.find(a.device)->find_port(a.port);
    const Port* pb = plan_.find(b.device)->find_port(b.port);
    seen_[a.device].lldp[a.port] = Neighbour{pb->peer_device, pb->peer_port};
    seen_[b.device].lldp[b.port] = Neighbour{pa->peer_device, pa->peer_port};
    seen_[pa->peer_device].lldp[pa->peer_port] = Neighbour{b.device, b.port};
    seen_[pb->peer_device].lldp[pb->peer_port] = Neighbour{a.device, a.port};
  }
  FabricPlan plan_;
  Observation seen_;
};

TEST_F(Validate, AClusterAsPlannedPassesEveryPort) {
  Report r = validate(plan_, seen_);
  EXPECT_EQ(r.failed(), 0u) << report_text(r, false);
  EXPECT_EQ(r.ports.size(), 2 * plan_.cables.size());
}

TEST_F(Validate, TwoCablesSwappedOnOneToRFailTheirFourEnds) {
  swap_plugs({"tor1", "h1-nic1"}, {"tor1", "h2-nic1"});
  Report r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"tor1:h1-nic1", "tor1:h2-nic1", "h1:nic1", "h2:nic1"}));
  EXPECT_NE(problems_of(r, "h1", "nic1").find("h1/nic1 is cabled to tor1 port h2-nic1, expected tor1 port h1-nic1"),
            std::string::npos)
      << problems_of(r, "h1", "nic1");
  EXPECT_NE(problems_of(r, "h1", "nic1").find("swap with h2/nic1?"), std::string::npos);
}

TEST_F(Validate, AHostsNicCablesSwappedNameTheRailsAndTheSwap) {
  swap_plugs({"h3", "nic1"}, {"h3", "nic2"});
  Report r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"h3:nic1", "h3:nic2", "tor1:h3-nic1", "tor2:h3-nic2"}));
  // The issue's own example, word for word.
  EXPECT_NE(problems_of(r, "h3", "nic2")
                .find("h3/nic2 is cabled to tor1 port h3-nic1, expected tor2 port h3-nic2: rail 2 NIC on rail 1's ToR "
                      "— swap with h3/nic1?"),
            std::string::npos)
      << problems_of(r, "h3", "nic2");
}

TEST_F(Validate, CablesSwappedAcrossRailsSayWhichRailsNicLandedWhere) {
  swap_plugs({"tor0", "h1-nic0"}, {"tor2", "h2-nic2"});
  Report r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"tor0:h1-nic0", "tor2:h2-nic2", "h1:nic0", "h2:nic2"}));
  EXPECT_NE(problems_of(r, "tor0", "h1-nic0").find("a rail 2 NIC on rail 0's ToR"), std::string::npos)
      << problems_of(r, "tor0", "h1-nic0");
}

TEST_F(Validate, AMissingCableAndAnExtraOneAndAWrongSwitch) {
  seen_["h0"].interfaces["nic1"].carrier = false;
  seen_["h0"].lldp.erase("nic1");
  seen_["tor1"].interfaces.erase("h0-nic1");
  seen_["tor1"].lldp.erase("h0-nic1");
  seen_["tor0"].interfaces["extra0"] = Interface{true, true, 9000, {}, ""};
  seen_["tor0"].lldp["extra0"] = Neighbour{"tor2", "extra0"};
  Report r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"h0:nic1", "tor1:h0-nic1", "tor0:extra0"}));
  EXPECT_NE(problems_of(r, "h0", "nic1").find("no carrier: cable missing or cut"), std::string::npos);
  EXPECT_NE(problems_of(r, "tor0", "extra0").find("a cable the plan does not have, to tor2 port extra0"), std::string::npos);

  seen_ = as_planned(plan_);
  seen_["h2"].lldp["nic0"] = Neighbour{"tor1", "spare3"};
  r = validate(plan_, seen_);
  EXPECT_NE(problems_of(r, "h2", "nic0").find("rail 0 NIC on rail 1's ToR (a port the plan does not have"),
            std::string::npos)
      << problems_of(r, "h2", "nic0");
}

TEST_F(Validate, MtuAddressBgpAndEcmpFaultsFailTheirPortOnly) {
  seen_["h1"].interfaces["nic0"].mtu = 1500;
  seen_["h2"].interfaces["nic2"].addresses = {*parse_prefix("10.77.2.40/24")};
  Report r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"h1:nic0", "h2:nic2"}));
  EXPECT_NE(problems_of(r, "h1", "nic0").find("MTU 1500, the plan 9000"), std::string::npos);
  EXPECT_NE(problems_of(r, "h2", "nic2").find("lacks address 10.77.2.3/24; has 10.77.2.40/24"), std::string::npos)
      << problems_of(r, "h2", "nic2");

  // A session shut on tor0's uplink to spine0: both ends of it, and no ECMP alarm on the
  // other ToRs for the path that session would have brought.
  seen_ = as_planned(plan_);
  const std::string spine0_side = to_string(plan_.find("spine0")->find_port("tor0")->address->base);
  const std::string tor0_side = to_string(plan_.find("tor0")->find_port("spine0")->address->base);
  seen_["tor0"].bgp[spine0_side] = "Idle (Admin)";
  seen_["spine0"].bgp[tor0_side] = "Active";
  for (const char* tor : {"tor1", "tor2"}) seen_[tor].routes["10.77.0.0/24"] = {"spine1"};
  r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"tor0:spine0", "spine0:tor0"}));
  EXPECT_NE(problems_of(r, "tor0", "spine0").find("BGP session to " + spine0_side + " (spine0 over spine0) is Idle (Admin)"),
            std::string::npos);

  // Sessions up but a ToR keeps one path per prefix: the uplink it dropped fails.
  seen_ = as_planned(plan_);
  for (auto& [dst, via] : seen_["tor1"].routes) via = {"spine0"};
  r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"tor1:spine1"}));
  EXPECT_NE(problems_of(r, "tor1", "spine1").find("missing from ECMP"), std::string::npos);
}

TEST_F(Validate, AnLldpAgentThatDoesNotAnswerIsOneFindingNotAPortAlarmEach) {
  seen_["tor2"].lldp.clear();
  seen_["tor2"].lldp_error = "lldpcli: cannot connect";
  Report r = validate(plan_, seen_);
  EXPECT_EQ(failed_ports(r), (std::set<std::string>{"tor2:"}));
  EXPECT_NE(problems_of(r, "tor2", "").find("its LLDP agent did not answer"), std::string::npos);
}

TEST_F(Validate, TheJsonUsesPtmFieldNames) {
  swap_plugs({"tor1", "h1-nic1"}, {"tor1", "h2-nic1"});
  std::string j = report_json(validate(plan_, seen_));
  for (const char* field : {"\"cbl status\": \"fail\"", "\"exp nbr\": \"tor1:h1-nic1\"", "\"act nbr\": \"tor1:h2-nic1\"",
                            "\"sysname\": \"tor1\"", "\"portID\": \"h2-nic1\"", "\"match on\": \"IfName\""})
    EXPECT_NE(j.find(field), std::string::npos) << field;
}

TEST(Observation, ParsesWhatTheToolsPrint) {
  // lldpcli prints one interface as an object, several as an array of objects.
  const char* one = R"({"lldp":{"interface":{"nic0":{"via":"LLDP","chassis":{"tor0":{"id":{"type":"mac","value":"x"}}},
                       "port":{"id":{"type":"ifname","value":"h0-nic0"},"ttl":"3"}}}}})";
  auto n = parse_lldp_neighbours(one, "one");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->at("nic0").sysname, "tor0");
  EXPECT_EQ(n->at("nic0").port, "h0-nic0");
  const char* two = R"({"lldp":{"interface":[{"a":{"chassis":{"s0":{}},"port":{"id":{"value":"p0"}}}},
                       {"b":{"chassis":{"s1":{}},"port":{"id":{"value":"p1"}}}}]}})";
  n = parse_lldp_neighbours(two, "two");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->size(), 2u);
  EXPECT_EQ(n->at("b").sysname, "s1");
  // A re-cable: the old neighbour is listed until its TTL runs out; the newest counts.
  const char* stale = R"({"lldp":{"interface":[{"a":{"rid":"7","chassis":{"new":{}},"port":{"id":{"value":"p9"}}}},
                         {"a":{"rid":"3","chassis":{"old":{}},"port":{"id":{"value":"p0"}}}}]}})";
  n = parse_lldp_neighbours(stale, "stale");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->at("a").sysname, "new");
  // Two cables swapped on one switch: the same chassis (one remote index) on two ports in
  // turn; the one heard last, by age, is on the wire.
  const char* moved = R"({"lldp":{"interface":[{"a":{"rid":"2","age":"0 day, 00:00:23","chassis":{"tor1":{}},"port":{"id":{"value":"p3"}}}},
                         {"a":{"rid":"2","age":"0 day, 00:00:01","chassis":{"tor1":{}},"port":{"id":{"value":"p0"}}}},
                         {"b":{"rid":"2","age":"0 day, 00:00:00","chassis":{"tor1":{}},"port":{"id":{"value":"p5"}}}},
                         {"b":{"rid":"2","age":"1 day, 00:00:00","chassis":{"tor1":{}},"port":{"id":{"value":"p4"}}}}]}})";
  n = parse_lldp_neighbours(moved, "moved");
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(n->at("a").port, "p0");
  EXPECT_EQ(n->at("b").port, "p5");
  EXPECT_TRUE(parse_lldp_neighbours("{\"lldp\":[]}", "none")->empty());
  EXPECT_FALSE(parse_lldp_neighbours("not json", "bad").ok());

  auto i = parse_ip_addresses(R"([{"ifname":"nic0","flags":["BROADCAST","UP","LOWER_UP"],"mtu":9000,
      "addr_info":[{"family":"inet","local":"10.77.0.1","prefixlen":24},{"family":"inet6","local":"fe80::1"}]},
      {"ifname":"rail0","flags":["UP"],"mtu":1500,"master":"x","addr_info":[]}])", "ip");
  ASSERT_TRUE(i.ok());
  EXPECT_TRUE(i->at("nic0").carrier);
  EXPECT_EQ(i->at("nic0").addresses, (std::vector<Prefix>{*parse_prefix("10.77.0.1/24")}));
  EXPECT_FALSE(i->at("rail0").carrier);

  auto b = parse_bgp_summary(R"({"ipv4Unicast":{"peers":{"172.16.0.1":{"state":"Established"},"172.16.0.3":{"state":"Active"}}}})", "bgp");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->at("172.16.0.3"), "Active");

  auto r = parse_routes(R"([{"dst":"10.77.1.0/24","nexthops":[{"gateway":"172.16.0.1","dev":"spine0"},{"gateway":"172.16.0.3","dev":"spine1"}]},
      {"dst":"192.168.0.3","gateway":"172.16.0.1","dev":"spine0"}])", "route");
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->at("10.77.1.0/24"), (std::vector<std::string>{"spine0", "spine1"}));
  EXPECT_EQ(r->at("192.168.0.3/32"), (std::vector<std::string>{"spine0"}));
}

}  // namespace
}  // namespace xm::ops
