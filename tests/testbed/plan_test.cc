// Laying a testbed out: names, addresses, rates, and the commands that build it.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "testbed/launcher.h"
#include "testbed/plan.h"
#include "testbed/setup.h"
#include "testbed/state.h"
#include "testbed/status.h"

namespace xm::testbed {
namespace {

Plan plan_of(uint32_t hosts, uint32_t rails, PlanOptions options = {}) {
  Result<Plan> p = make_plan(simple_spec(hosts, rails), "test", options);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? *p : Plan{};
}

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
  EXPECT_EQ(p.fabric_netns, "xm-tb-fab");
  EXPECT_EQ(p.spine_netns, "xm-tb-spine");
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
  EXPECT_EQ(p.rails[1].bridge, "tor1");
  EXPECT_EQ(p.rails[1].uplink, "tor1-spine");
  EXPECT_EQ(p.rails[1].rate_bps, 1'600'000'000u);  // non-blocking: 4 × 400mbit
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
  Plan p = plan_of(250, 16, o);
  EXPECT_EQ(p.hosts[249].nics[15].address, "10.12.15.250");
  EXPECT_EQ(p.hosts[249].nics[15].rate_bps, 200'000'000u);
  EXPECT_EQ(p.rails[15].rate_bps, 100'000'000u);
  for (const Batch& b : setup_batches(p))
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
}

TEST(Plan, SpecNicSpeedsAndRailsCarryOver) {
  topo::ClusterSpec spec = simple_spec(2, 2);
  spec.server.nics = {{"mlx5_0", 0, 200}, {"mlx5_3", 3, 100}};
  Plan p = *make_plan(spec, "spec.yaml", {});
  EXPECT_EQ(p.hosts[1].nics[1].ifname, "nic3");
  EXPECT_EQ(p.hosts[1].nics[1].device, "mlx5_3");
  EXPECT_EQ(p.hosts[1].nics[1].address, "10.77.3.2");
  EXPECT_EQ(p.hosts[1].nics[1].rate_bps, 100'000'000u);
  EXPECT_EQ(p.rails[0].rate_bps, 400'000'000u);
  EXPECT_EQ(p.rails[1].rate_bps, 200'000'000u);
  EXPECT_EQ(p.find_nic("h1/mlx5_3"), &p.hosts[1].nics[1]);
}

TEST(Setup, PolicyRoutingPerRail) {
  Plan p = plan_of(2, 2);
  std::vector<Batch> b = setup_batches(p);
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "rule add from 10.77.1.0/24 lookup 101 pref 1001"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "route add 10.77.1.0/24 dev nic1 src 10.77.1.2 table 101"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "route add default via 10.77.1.254 dev nic1 onlink table 101"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "route add unreachable default metric 4294967295 table 101"));
  EXPECT_TRUE(has_line(b, "xm-tb-h1", "neigh replace 10.77.1.1 lladdr 02:78:6d:01:00:00 dev nic1 nud permanent"));
  EXPECT_TRUE(has_line(b, "xm-tb-spine", "addr add 10.77.0.254/24 dev tor0"));
  EXPECT_TRUE(has_line(b, "xm-tb-fab", "link set h1-nic0 master tor0 up"));
  EXPECT_TRUE(has_line(b, "xm-tb-fab", "fdb replace 02:78:6d:00:fe:00 dev tor0-spine master static"));
}

TEST(Setup, ShapingOnBothEndsOfEveryLink) {
  Plan p = plan_of(2, 1);
  std::vector<Batch> b = setup_batches(p);
  Tbf t = tbf_for(400'000'000, p.mtu);
  EXPECT_GE(t.burst_bytes, 65536u + p.mtu);  // a whole GSO super-packet fits the bucket
  EXPECT_GT(t.limit_bytes, t.burst_bytes);
  std::string tail = " burst " + std::to_string(t.burst_bytes) + " limit " + std::to_string(t.limit_bytes);
  EXPECT_TRUE(has_line(b, "xm-tb-h0", "qdisc replace dev nic0 root tbf rate 400000000bit" + tail));
  EXPECT_TRUE(has_line(b, "xm-tb-fab", "qdisc replace dev h0-nic0 root tbf rate 400000000bit" + tail));
  Tbf s = tbf_for(800'000'000, p.mtu);
  std::string spine = " root tbf rate 800000000bit burst " + std::to_string(s.burst_bytes) + " limit " +
                      std::to_string(s.limit_bytes);
  EXPECT_TRUE(has_line(b, "xm-tb-fab", "qdisc replace dev tor0-spine" + spine));
  EXPECT_TRUE(has_line(b, "xm-tb-spine", "qdisc replace dev tor0" + spine));
}

TEST(Setup, SpineForwardsAndHostsTolerateAsymmetry) {
  auto has = [](const Sysctls& s, const std::string& key, const std::string& value) {
    return std::find(s.begin(), s.end(), std::pair{key, value}) != s.end();
  };
  EXPECT_TRUE(has(spine_sysctls(), "net.ipv4.ip_forward", "1"));
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
                  {"XM_TESTBED_RAILS", "0,1"}};
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
