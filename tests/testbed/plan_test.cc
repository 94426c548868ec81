// Laying a testbed out: names, addresses, rates, and the commands that build it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "testbed/daemons.h"
#include "testbed/launcher.h"
#include "testbed/plan.h"
#include "testbed/setup.h"
#include "testbed/state.h"
#include "testbed/status.h"

namespace xm::testbed {
namespace {

Layout layout_of(uint32_t hosts, uint32_t rails, PlanOptions options = {}) {
  Result<Layout> l = make_layout(simple_spec(hosts, rails), "test", options);
  EXPECT_TRUE(l.ok()) << (l.ok() ? "" : l.error().message);
  return l.ok() ? *l : Layout{};
}

Plan plan_of(uint32_t hosts, uint32_t rails, PlanOptions options = {}) { return layout_of(hosts, rails, options).plan; }

bool has_line(const std::vector<Batch>& batches, const std::string& netns, const std::string& line) {
  for (const Batch& b : batches)
    if (b.netns == netns && std::find(b.lines.begin(), b.lines.end(), line) != b.lines.end()) return true;
  return false;
}

TEST(Name, Checked) {
  EXPECT_TRUE(check_name("tb").ok());
  EXPECT_TRUE(check_name("a1234567").ok());
  for (const char* bad : {"", "a12345678", "Tb", "1tb", "t-b", "t_b", "t b", "tb/"})
    EXPECT_FALSE(check_name(bad).ok()) << bad;
}

TEST(Plan, AddressesAndNames) {
  Plan p = plan_of(4, 2);
  ASSERT_EQ(p.switches.size(), 4u);  // a ToR per rail, two spines
  EXPECT_EQ(p.switches[1].netns, "xm-tb-tor1");
  EXPECT_EQ(p.switches[3].netns, "xm-tb-spine1");
  EXPECT_EQ(p.netns_of("spine0"), "xm-tb-spine0");
  ASSERT_EQ(p.hosts.size(), 4u);
  ASSERT_EQ(p.rails.size(), 2u);
  const NicPlan& n = p.hosts[3].nics[1];
  EXPECT_EQ(p.hosts[3].netns, "xm-tb-h3");
  EXPECT_EQ(n.ifname, "nic1");
  EXPECT_EQ(n.fabric_port, "h3-nic1");
  EXPECT_EQ(n.address, "10.77.1.4");
  EXPECT_EQ(n.mac, "02:78:6d:01:03:00");
  EXPECT_EQ(n.rate_bps, 400'000'000u);  // 400 Gbit/s scaled 1:1000
  EXPECT_EQ(p.rails[1].address, "10.77.1.254");
  EXPECT_EQ(p.rails[1].tor, "tor1");
  EXPECT_EQ(p.rails[1].bridge, "rail1");
  EXPECT_EQ(n.tor, "tor1");
  ASSERT_EQ(p.uplinks.size(), 4u);
  const UplinkPlan& u = p.uplinks[3];
  EXPECT_EQ(u.tor, "tor1");
  EXPECT_EQ(u.tor_port, "spine1");
  EXPECT_EQ(u.spine, "spine1");
  EXPECT_EQ(u.spine_port, "tor1");
  EXPECT_EQ(u.rate_bps, 800'000'000u);  // non-blocking: 4 × 400mbit over 2 uplinks
  EXPECT_EQ(p.find_nic("h3/nic1"), &p.hosts[3].nics[1]);
  EXPECT_EQ(p.find_nic("h4/nic0"), nullptr);
  EXPECT_EQ(p.find_nic("h0/nic2"), nullptr);
  EXPECT_EQ(p.find_nic("h01/nic0"), nullptr);
  EXPECT_EQ(p.find_nic("nic0"), nullptr);
}

TEST(Plan, RatesSubnetAndInterfaceNameLengths) {
  PlanOptions o;
  o.name = "abcdefgh";
  o.subnet = 12;
  o.rate_bps = 200'000'000;
  o.spine_rate_bps = 100'000'000;
  Layout l = layout_of(250, 16, o);
  const Plan& p = l.plan;
  EXPECT_EQ(p.hosts[249].nics[15].address, "10.12.15.250");
  EXPECT_EQ(p.hosts[249].nics[15].rate_bps, 200'000'000u);
  for (const UplinkPlan& u : p.uplinks) EXPECT_EQ(u.rate_bps, 100'000'000u);
  for (const Batch& b : setup_batches(p, l.fabric))
    for (const std::string& line : b.lines) {
      // every interface name the commands create fits IFNAMSIZ (15 characters)
      for (const char* key : {"link add ", "peer name "}) {
        size_t at = line.find(key);
        if (at == std::string::npos) continue;
        std::string name = line.substr(at + std::strlen(key));
        name = name.substr(0, name.find(' '));
        EXPECT_LE(name.size(), 15u) << line;
      }
    }
}

TEST(Plan, SpecsItCannotEmulate) {
  topo::ClusterSpec clos = simple_spec(4, 2);
  clos.fabric.kind = topo::FabricKind::kClos;
  EXPECT_FALSE(make_plan(clos, "c.yaml", {}).ok());
  topo::ClusterSpec shared = simple_spec(4, 2);
  shared.server.nics[1].rail = 0;
  Result<Plan> r = make_plan(shared, "s.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("share rail 0"), std::string::npos) << r.error().message;
  EXPECT_FALSE(make_plan(simple_spec(251, 1), "big", {}).ok());
  PlanOptions bad;
  bad.subnet = 255;
  EXPECT_FALSE(make_plan(simple_spec(2, 1), "x", bad).ok());
  topo::ClusterSpec planes = simple_spec(4, 2);
  planes.fabric.planes = 2;
  planes.server.nic_ports = 2;
  r = make_plan(planes, "p.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("fabric.planes"), std::string::npos) << r.error().message;
  topo::ClusterSpec segments = simple_spec(4, 2);
  segments.fabric.tor.servers = 2;
  r = make_plan(segments, "s.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("one segment"), std::string::npos) << r.error().message;
  topo::ClusterSpec long_name = simple_spec(20, 1);
  long_name.server.nics[0].name = "enp1s0f0np0xyz";
  r = make_plan(long_name, "l.yaml", {});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("too long"), std::string::npos) << r.error().message;
  PlanOptions no_spines;
  no_spines.spines = 0;
  r = make_plan(simple_spec(2, 2), "x", no_spines);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("--spines"), std::string::npos) << r.error().message;
}

TEST(Plan, ASpecWithItsOwnSpineTierKeepsIt) {
  topo::ClusterSpec spec = simple_spec(2, 2);
  spec.fabric.tor.uplinks = 3;
  spec.fabric.tor.ports = 5;
  topo::AggTier agg;
  agg.count = 3;
  agg.tors = 2;
  agg.ports = 2;
  spec.fabric.agg = agg;
  Plan p = *make_plan(spec, "spines.yaml", {});
  EXPECT_EQ(p.switches.size(), 2u + 3);
  EXPECT_EQ(p.uplinks.size(), 2u * 3);
}

TEST(Plan, SpecNicSpeedsAndRailsCarryOver) {
  topo::ClusterSpec spec = simple_spec(2, 2);
  spec.server.nics = {{"mlx5_0", 0, 200}, {"mlx5_3", 3, 100}};
  Plan p = *make_plan(spec, "spec.yaml", {});
  EXPECT_EQ(p.hosts[1].nics[1].ifname, "mlx5_3");  // the plan's port: the spec's NIC name
  EXPECT_EQ(p.hosts[1].nics[1].device, "mlx5_3");
  EXPECT_EQ(p.hosts[1].nics[1].address, "10.77.3.2");
  EXPECT_EQ(p.hosts[1].nics[1].rate_bps, 100'000'000u);
  EXPECT_EQ(p.rails[1].tor, "tor3");
  EXPECT_EQ(p.hosts[1].nics[1].fabric_port, "h1-mlx5_3");
  EXPECT_EQ(p.uplinks[0].rate_bps, 200'000'000u);  // rail 0: 2 × 200mbit over 2 uplinks
  EXPECT_EQ(p.uplinks[2].rate_bps, 100'000'000u);
  EXPECT_EQ(p.find_nic("h1/mlx5_3"), &p.hosts[1].nics[1]);
}

TEST(Setup, TheCablesAndWhatThePlanConfigures) {
  Layout l = layout_of(2, 2);
  std::vector<Batch> b = setup_batches(l.plan, l.fabric);
  EXPECT_TRUE(has_line(b, "xm-tb-h1",
                       "link add nic1 address 02:78:6d:01:01:00 mtu 9000 type veth peer name h1-nic1 netns xm-tb-tor1 mtu 9000"));
  EXPECT_TRUE(has_line(b, "xm-tb-tor0", "link add spine1 mtu 9000 type veth peer name tor0 netns xm-tb-spine1 mtu 9000"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "rule add from 10.77.1.2 lookup 101 priority 1001"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "route replace 10.77.1.0/24 dev nic1 src 10.77.1.2 table 101"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "route replace default via 10.77.1.254 dev nic1 src 10.77.1.2 table 101"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "route replace unreachable default metric 4294967295 table 101"));
  EXPECT_TRUE(has_line(b, "xm-tb-tor0", "address add 10.77.0.254/24 dev rail0"));
  EXPECT_TRUE(has_line(b, "xm-tb-tor0", "link set dev h1-nic0 mtu 9000 master rail0 up"));
  EXPECT_TRUE(has_line(b, "xm-tb-tor0", "address add 172.16.0.2/31 dev spine1"));
  EXPECT_TRUE(has_line(b, "xm-tb-spine1", "address add 172.16.0.3/31 dev tor0"));
  // Neighbours pinned: rail peers and the gateway, whose bridge gets a MAC of its own.
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "neigh replace 10.77.1.1 lladdr 02:78:6d:01:00:00 dev nic1 nud permanent"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "neigh replace 10.77.1.254 lladdr 02:78:6d:01:fe:00 dev nic1 nud permanent"));
  EXPECT_TRUE(has_line(b, "xm-tb-tor1", "link set dev rail1 address 02:78:6d:01:fe:00"));
  // Every cable's veth is made before anything configures its ends.
  size_t last_cable = 0, first_config = b.size();
  for (size_t i = 0; i < b.size(); ++i)
    for (const std::string& line : b[i].lines) {
      if (line.find("type veth") != std::string::npos) last_cable = i;
      if (line.starts_with("address ") && first_config == b.size()) first_config = i;
    }
  EXPECT_LT(last_cable, first_config);
}

TEST(Setup, ShapingOnBothEndsOfEveryCable) {
  Layout l = layout_of(2, 1);
  const Plan& p = l.plan;
  std::vector<Batch> b = setup_batches(p, l.fabric);
  Tbf t = tbf_for(400'000'000, p.mtu);
  EXPECT_GE(t.burst_bytes, 65536u + p.mtu);  // a whole GSO super-packet fits the bucket
  EXPECT_GT(t.limit_bytes, t.burst_bytes);
  std::string tail = " burst " + std::to_string(t.burst_bytes) + " limit " + std::to_string(t.limit_bytes);
  EXPECT_TRUE(has_line(b, "xm-tb-h0", "qdisc replace dev nic0 root tbf rate 400000000bit" + tail));
  EXPECT_TRUE(has_line(b, "xm-tb-tor0", "qdisc replace dev h0-nic0 root tbf rate 400000000bit" + tail));
  EXPECT_TRUE(has_line(b, "xm-tb-tor0", "qdisc replace dev spine1 root tbf rate 400000000bit" + tail));
  EXPECT_TRUE(has_line(b, "xm-tb-spine1", "qdisc replace dev tor0 root tbf rate 400000000bit" + tail));
}

TEST(Setup, SwitchesRouteAndHostsTolerateAsymmetry) {
  auto has = [](const Sysctls& s, const std::string& key, const std::string& value) {
    return std::find(s.begin(), s.end(), std::pair{key, value}) != s.end();
  };
  EXPECT_TRUE(has(switch_sysctls(), "net.ipv4.ip_forward", "1"));
  EXPECT_TRUE(has(switch_sysctls(), "net.ipv4.fib_multipath_hash_policy", "1"));
  EXPECT_TRUE(has(host_sysctls(), "net.ipv4.conf.all.rp_filter", "0"));
  EXPECT_TRUE(has(host_sysctls(), "net.ipv4.conf.all.arp_ignore", "1"));
  EXPECT_TRUE(has(host_sysctls(), "net.ipv6.conf.all.disable_ipv6", "1"));
  EXPECT_FALSE(has(host_sysctls(), "net.ipv4.ip_forward", "1"));
  EXPECT_TRUE(has(host_sysctls(), "net.ipv4.tcp_congestion_control", "reno"));  // not the machine's default
}

TEST(State, JsonRoundTrip) {
  PlanOptions o;
  o.name = "rt";
  o.rate_bps = 123'000'000;
  Plan p = plan_of(3, 2, o);
  Result<Plan> back = plan_from_json(plan_to_json(p), "mem");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(plan_to_json(*back), plan_to_json(p));
  EXPECT_FALSE(plan_from_json("{}", "mem").ok());
  EXPECT_FALSE(plan_from_json("not json", "mem").ok());
}

TEST(State, FilesInTheStateDirectory) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("xm-tb-state-" + std::to_string(::getpid()));
  ::setenv("XM_TESTBED_STATE_DIR", dir.c_str(), 1);
  PlanOptions o;
  o.name = "files";
  Plan p = plan_of(2, 1, o);
  ASSERT_TRUE(save_state(p).ok());
  EXPECT_EQ(state_names(), std::vector<std::string>{"files"});
  Result<Plan> loaded = load_state("files");
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->hosts[1].nics[0].address, "10.77.0.2");
  remove_state("files");
  Result<Plan> gone = load_state("files");
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("no testbed named \"files\""), std::string::npos) << gone.error().message;
  ::unsetenv("XM_TESTBED_STATE_DIR");
  std::filesystem::remove_all(dir);
}

TEST(Launcher, TorchrunAndXcclEnvironment) {
  Plan p = plan_of(4, 2);
  RunOptions all;
  all.ranks_per_host = 2;
  Env e = rank_env(p, 2, 1, all, 29500, "s3cret");
  Env expected = {{"RANK", "5"},
                  {"WORLD_SIZE", "8"},
                  {"LOCAL_RANK", "1"},
                  {"LOCAL_WORLD_SIZE", "2"},
                  {"NODE_RANK", "2"},
                  {"MASTER_ADDR", "10.77.0.1"},
                  {"MASTER_PORT", "29500"},
                  {"XCCL_SECRET", "s3cret"},
                  {"XCCL_RAILS", "10.77.0.3@0.4,10.77.1.3@0.4"},
                  {"XM_TESTBED", "tb"},
                  {"XM_TESTBED_HOST", "2"},
                  {"XM_TESTBED_NETNS", "xm-tb-h2"},
                  {"XM_TESTBED_RAILS", "0,1"},
                  {"XCCL_RAIL_ADVICE", rail_advice_path("tb")}};
  EXPECT_EQ(e, expected);
  RunOptions own = all;
  own.rails = RailMode::kOwn;
  own.ranks_per_host = 3;
  Env o = rank_env(p, 1, 2, own, 1, "x");  // local rank 2 of 3 on 2 NICs: NIC 0
  EXPECT_EQ(o[0], (std::pair<std::string, std::string>{"RANK", "5"}));
  EXPECT_EQ(o[8], (std::pair<std::string, std::string>{"XCCL_RAILS", "10.77.0.2@0.4"}));
  EXPECT_EQ(o[12], (std::pair<std::string, std::string>{"XM_TESTBED_RAILS", "0"}));
  RunOptions spare = all;
  spare.rails = RailMode::kOwnSpare;
  Env s = rank_env(p, 2, 1, spare, 1, "x");  // its own NIC 1 first, NIC 0 as the spare
  EXPECT_EQ(s[8], (std::pair<std::string, std::string>{"XCCL_RAILS", "10.77.1.3@0.4,10.77.0.3@0.4/spare"}));
  EXPECT_EQ(s[12], (std::pair<std::string, std::string>{"XM_TESTBED_RAILS", "1,0"}));
}

TEST(Launcher, SecretsAreFreshHex) {
  std::string a = new_secret(), b = new_secret();
  EXPECT_EQ(a.size(), 64u);  // what xccl's XCCL_SECRET takes
  EXPECT_NE(a, b);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
}

TEST(Status, ParsesIpLinkStatistics) {
  const char* json = R"([{"ifindex":2,"ifname":"nic0","operstate":"UP",
    "stats64":{"rx":{"bytes":10,"packets":1,"errors":0,"dropped":0},
               "tx":{"bytes":2000,"packets":3,"errors":0,"dropped":4}}},
    {"ifindex":1,"ifname":"lo","operstate":"UNKNOWN",
    "stats64":{"rx":{"bytes":0,"packets":0},"tx":{"bytes":0,"packets":0}}}])";
  auto r = parse_link_stats(json, "ip");
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_TRUE(r->at("nic0").up);
  EXPECT_FALSE(r->at("lo").up);
  EXPECT_EQ(r->at("nic0").tx_bytes, 2000u);
  EXPECT_EQ(r->at("nic0").rx_packets, 1u);
  EXPECT_EQ(r->at("nic0").tx_dropped, 4u);
  EXPECT_FALSE(parse_link_stats("[{}]", "ip").ok());
}

}  // namespace
}  // namespace xm::testbed
