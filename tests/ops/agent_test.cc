// The agent's parts without a testbed: who a host probes (from a 16 x 8 plan), the
// exposition text (checked by Prometheus's own promtool), the generated Prometheus
// configuration (promtool check config), and the prober over loopback — an answered
// flow counts replies and round trips, an unanswered one counts losses and turns fast.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "common/shell.h"
#include "ops/agent.h"
#include "ops/exposition.h"
#include "ops/monitor.h"
#include "ops/probe_targets.h"
#include "ops/prober.h"
#include "ops/test_specs.h"

namespace xm::ops {
namespace {

FabricPlan plan_of(uint32_t servers, uint32_t rails) {
  Result<FabricPlan> plan = make_plan(ops_test::rail_spec(servers, rails, 2), PlanOptions{});
  EXPECT_TRUE(plan) << (plan ? "" : plan.error().message);
  return std::move(plan).value();
}

TEST(ProbeTargets, EveryRailPeerAndCrossRailPeersOnOtherRails) {
  FabricPlan plan = plan_of(16, 8);
  Result<std::vector<ProbeTarget>> t = probe_targets(plan, "h3", ProbeMeshOptions{2});
  ASSERT_TRUE(t) << t.error().message;
  std::map<std::string, std::set<std::string>> rail_peers;  // local NIC -> peer hosts on its rail
  size_t cross = 0;
  for (const ProbeTarget& p : *t) {
    EXPECT_NE(p.dst_host, "h3");
    if (p.cross_rail) {
      ++cross;
      EXPECT_NE(p.src_rail, p.dst_rail) << p.src_port << " -> " << p.dst_host << "/" << p.dst_port;
    } else {
      EXPECT_EQ(p.src_rail, p.dst_rail);
      EXPECT_EQ(p.src_port, p.dst_port);  // NIC r of one host faces NIC r of the other
      rail_peers[p.src_port].insert(p.dst_host);
    }
    EXPECT_NE(p.src.value, 0u);
    EXPECT_NE(p.dst.value, 0u);
  }
  EXPECT_EQ(rail_peers.size(), 8u);
  for (const auto& [nic, peers] : rail_peers) EXPECT_EQ(peers.size(), 15u) << nic;
  EXPECT_EQ(cross, 8u * 2);
  // The same plan and host give the same targets.
  Result<std::vector<ProbeTarget>> again = probe_targets(plan, "h3", ProbeMeshOptions{2});
  ASSERT_TRUE(again);
  ASSERT_EQ(again->size(), t->size());
  for (size_t i = 0; i < t->size(); ++i) EXPECT_EQ((*t)[i].dst.value, (*again)[i].dst.value);
}

TEST(ProbeTargets, CrossRailPairsCoverEveryOrderedPairOfRailsAcrossTheHosts) {
  FabricPlan plan = plan_of(16, 8);
  std::set<std::pair<uint32_t, uint32_t>> rails;
  for (int h = 0; h < 16; ++h) {
    Result<std::vector<ProbeTarget>> t = probe_targets(plan, "h" + std::to_string(h), ProbeMeshOptions{2});
    ASSERT_TRUE(t);
    for (const ProbeTarget& p : *t)
      if (p.cross_rail) rails.insert({p.src_rail, p.dst_rail});
  }
  // Each NIC crosses to the next two rails: every ToR's uplinks carry probes both ways.
  EXPECT_GE(rails.size(), 16u);
  std::set<uint32_t> from, to;
  for (auto [a, b] : rails) from.insert(a), to.insert(b);
  EXPECT_EQ(from.size(), 8u);
  EXPECT_EQ(to.size(), 8u);
}

TEST(ProbeBudget, LeavesA16x8FabricAsItIsAndSpendsASmallOnesOnFlowsThenRate) {
  ProberOptions asked;  // the defaults: 4 flows, 1 s, 0.1 s fast, 180 probes a second
  Result<std::vector<ProbeTarget>> big = probe_targets(plan_of(16, 8), "h3");
  ASSERT_TRUE(big);
  ProberOptions o = within_budget(asked, *big);  // 120 rail + 16 cross-rail pairs x 4 = 184 a second
  EXPECT_EQ(o.flows, 4u);
  EXPECT_DOUBLE_EQ(o.interval_s, 1.0);

  Result<std::vector<ProbeTarget>> small = probe_targets(plan_of(4, 2), "h1");
  ASSERT_TRUE(small);
  ASSERT_EQ(small->size(), 6u + 4u);  // 2 NICs x 3 rail peers, 2 NICs x 2 cross-rail peers
  o = within_budget(asked, *small);
  EXPECT_EQ(o.flows, kBudgetFlows);  // (180 - 6) / 4 = 43 would do: capped
  EXPECT_NEAR(o.interval_s, (6.0 + 4.0 * kBudgetFlows) / 180, 1e-9);
  EXPECT_NEAR((6.0 + 4.0 * o.flows) / o.interval_s, 180, 1e-6) << "the budget spent, no more";

  ProberOptions exact = asked;
  exact.budget_per_s = 0;
  o = within_budget(exact, *small);
  EXPECT_EQ(o.flows, 4u);
  EXPECT_DOUBLE_EQ(o.interval_s, 1.0);

  ProberOptions faster = asked;  // a shorter interval asked: fewer flows fit its budget
  faster.interval_s = 0.2;
  o = within_budget(faster, *small);
  EXPECT_EQ(o.flows, 7u);  // (180 x 0.2 - 6) / 4
  EXPECT_NEAR(o.interval_s, (6.0 + 4.0 * 7) / 180, 1e-9);

  ProberOptions more = asked;  // never fewer flows nor a longer interval than asked
  more.flows = 32;
  more.interval_s = 0.2;
  o = within_budget(more, *small);
  EXPECT_EQ(o.flows, 32u);
  EXPECT_DOUBLE_EQ(o.interval_s, 0.2);
  more.budget_per_s = 10000;  // more than the fast rate: the interval stops there
  EXPECT_DOUBLE_EQ(within_budget(more, *small).interval_s, asked.fast_interval_s);
}

TEST(ProbeTargets, UnknownHostIsAnError) {
  FabricPlan plan = plan_of(4, 2);
  Result<std::vector<ProbeTarget>> t = probe_targets(plan, "h9");
  ASSERT_FALSE(t);
  EXPECT_NE(t.error().message.find("h9"), std::string::npos);
  EXPECT_FALSE(probe_targets(plan, "tor0"));
}

// Runs promtool on `text` (`check metrics` reads stdin); its exit code and output.
shell::Outcome promtool(const std::string& args, const std::string& text) {
  std::string path = "/tmp/xm-agent-test-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << text;
  shell::Outcome o = shell::run("promtool " + args + " " + (args == "check metrics" ? "< " : "") + path, true);
  std::remove(path.c_str());
  return o;
}

TEST(Exposition, PromtoolAcceptsItAndLabelsAreEscaped) {
  Exposition e;
  e.family("xm_test_total", "counter", "A counter with\na newline in its help.");
  e.sample({{"a", "plain"}, {"b", "quote\" back\\slash\nnewline"}}, 3);
  e.sample({}, 1.5);
  e.family("xm_test_seconds", "summary", "A summary.");
  e.sample({{"a", "x"}}, 0.25, "_sum");
  e.sample({{"a", "x"}}, 4, "_count");
  const std::string& t = e.text();
  EXPECT_NE(t.find("xm_test_total{a=\"plain\",b=\"quote\\\" back\\\\slash\\nnewline\"} 3\n"), std::string::npos) << t;
  EXPECT_NE(t.find("xm_test_total 1.5\n"), std::string::npos) << t;
  EXPECT_NE(t.find("# HELP xm_test_total A counter with\\na newline in its help.\n"), std::string::npos) << t;
  EXPECT_NE(t.find("xm_test_seconds_count{a=\"x\"} 4\n"), std::string::npos) << t;
  shell::Outcome o = promtool("check metrics", t);
  EXPECT_EQ(o.exit_code, 0) << o.out << t;
}

TEST(Monitor, PrometheusAcceptsTheGeneratedConfiguration) {
  // (half a second: Prometheus refuses fractional durations such as "0.5s")
  std::string config = prometheus_config("tb", {{"h0", 9101}, {"h1", 9102}}, 0.5);
  EXPECT_NE(config.find("scrape_interval: 500ms"), std::string::npos) << config;
  EXPECT_NE(config.find("'127.0.0.1:9101'"), std::string::npos);
  EXPECT_NE(config.find("host: h1"), std::string::npos);
  std::string path = "/tmp/xm-prometheus-test-" + std::to_string(::getpid()) + ".yml";
  std::ofstream(path) << config;
  shell::Outcome o = shell::run("promtool check config " + path, true);
  std::remove(path.c_str());
  EXPECT_EQ(o.exit_code, 0) << o.out << config;
}

// Two flows over loopback: to 127.0.0.1, where this prober itself answers, and to
// 127.0.0.2, where nobody does.
std::vector<ProbeTarget> loopback_targets() {
  ProbeTarget answered{"lo", Ipv4{0x7f000001}, 0, "self", "lo", Ipv4{0x7f000001}, 0, false};
  ProbeTarget silent{"lo", Ipv4{0x7f000001}, 0, "nobody", "lo", Ipv4{0x7f000002}, 1, true};
  return {answered, silent};
}

TEST(Prober, CountsRepliesRoundTripsAndLosses) {
  ProberOptions o;
  o.port = uint16_t(20000 + ::getpid() % 20000);
  o.budget_per_s = 0;  // exactly these flows and rates
  o.flows = 2;
  o.interval_s = 0.05;
  o.fast_interval_s = 0.01;
  o.timeout_s = 0.1;
  Result<std::unique_ptr<Prober>> p = Prober::open(loopback_targets(), o);
  ASSERT_TRUE(p) << p.error().message;
  Prober& prober = **p;
  EXPECT_EQ(prober.flows_of(0), 1u);
  EXPECT_EQ(prober.flows_of(1), 2u);
  std::atomic<bool> stop{false};
  std::thread t([&] { prober.run(stop); });
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  stop = true;
  t.join();
  ProberSnapshot s = prober.snapshot();
  const FlowStats& ok = s.flows[prober.flow_index(0, 0)];
  EXPECT_GE(ok.sent, 5u);
  EXPECT_GE(ok.received + 1, ok.sent);  // the last may still be in flight
  EXPECT_EQ(ok.lost, 0u);
  EXPECT_EQ(ok.lost_in_a_row, 0u);
  EXPECT_GT(ok.rtt_sum_s, 0);
  EXPECT_LT(ok.rtt_sum_s / double(ok.received), 0.05);
  EXPECT_GE(s.echoed, ok.received);
  for (uint32_t f = 0; f < 2; ++f) {
    const FlowStats& lost = s.flows[prober.flow_index(1, f)];
    EXPECT_EQ(lost.received, 0u);
    EXPECT_GE(lost.lost, 3u) << "flow " << f;
    EXPECT_EQ(lost.lost_in_a_row, lost.lost) << "none answered: every loss is in the current run";
    // After its first loss the flow is probed at the fast rate: more probes than the slow
    // rate alone would send in 0.8 s (16).
    EXPECT_GT(lost.sent, 20u) << "flow " << f;
    EXPECT_TRUE(lost.fast);
  }
  EXPECT_TRUE(ok.fast) << "every flow of a suspect's NIC is probed fast";
}

TEST(Prober, TwoProbersCannotShareAPort) {
  ProberOptions o;
  o.port = uint16_t(20000 + (::getpid() + 7) % 20000);
  Result<std::unique_ptr<Prober>> a = Prober::open(loopback_targets(), o);
  ASSERT_TRUE(a) << a.error().message;
  Result<std::unique_ptr<Prober>> b = Prober::open(loopback_targets(), o);
  ASSERT_FALSE(b);
  EXPECT_NE(b.error().message.find(std::to_string(o.port)), std::string::npos) << b.error().message;
}

}  // namespace
}  // namespace xm::ops
