// Workloads and the HPCC simulator's file formats.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "sim/network.h"
#include "sim/workload/cdf.h"
#include "sim/workload/generators.h"
#include "sim/workload/hpcc_io.h"
#include "sim_fixtures.h"

namespace xm::sim {
namespace {

const char* kWeb = XM_CDF_DIR "/WebSearch_distribution.txt";

TEST(FlowSizeCdf, WebSearchSamplesMatchItsMean) {
  Result<FlowSizeCdf> cdf = FlowSizeCdf::load(kWeb);
  ASSERT_TRUE(cdf.ok()) << cdf.error().message;
  EXPECT_NEAR(cdf->mean(), 1.71e6, 0.01e6);
  Random rng(5);
  double sum = 0;
  int small = 0;
  const int n = 200'000;
  for (int i = 0; i < n; ++i) {
    uint64_t s = cdf->sample(rng);
    sum += double(s);
    small += s <= 10'000;
  }
  EXPECT_NEAR(sum / n, cdf->mean(), cdf->mean() * 0.03);
  EXPECT_NEAR(double(small) / n, 0.15, 0.005) << "15 % of WebSearch flows are at most 10 KB";
}

TEST(FlowSizeCdf, ErrorsNameTheLine) {
  auto bad = FlowSizeCdf::parse("0 0\n100 50\n50 60\n200 100\n", "x.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "x.txt:3: sizes must ascend");
  EXPECT_EQ(FlowSizeCdf::parse("0 0\n100 fifty\n", "y").error().message,
            "y:2: expected \"<flow size in bytes> <cumulative percent>\"");
  EXPECT_FALSE(FlowSizeCdf::parse("0 0\n100 90\n", "z").ok()) << "must end at 100";
}

TEST(Workloads, PoissonOffersTheAskedLoad) {
  Result<FlowSizeCdf> cdf = FlowSizeCdf::load(kWeb);
  ASSERT_TRUE(cdf.ok());
  SimTopology t = test::star(16, 100);
  PoissonOptions o;
  o.load = 0.5, o.duration = Time::ms(50);
  Random rng(9);
  auto flows = poisson_flows(t, *cdf, o, rng);
  ASSERT_TRUE(flows.ok());
  double bytes = 0;
  for (const FlowSpec& f : *flows) {
    bytes += double(f.bytes);
    EXPECT_NE(f.src, f.dst);
    EXPECT_LT(f.start, o.duration);
  }
  const double offered = bytes * 8 / o.duration.seconds_f() / (16 * 100e9);
  EXPECT_NEAR(offered, 0.5, 0.1) << "heavy-tailed sizes: a loose bound";
}

TEST(Workloads, PermutationIsOneCycleWithoutSelfLoops) {
  Random rng(1);
  auto flows = permutation_flows(test::star(9), PermutationOptions{}, rng);
  ASSERT_TRUE(flows.ok());
  std::set<uint32_t> dsts;
  for (const FlowSpec& f : *flows) {
    EXPECT_NE(f.src, f.dst);
    dsts.insert(f.dst);
  }
  EXPECT_EQ(dsts.size(), 9u);
}

TEST(Workloads, RingAllReduceChainsStepsAcrossEachRail) {
  SimTopology t = test::star(8);
  for (uint32_t h = 0; h < 8; ++h) t.rail[h] = h % 2, t.server[h] = h / 2;  // 4 servers × 2 rails
  auto flows = ring_allreduce_flows(t, AllReduceOptions{.bytes = 4'000'000, .start = Time()}, 0);
  ASSERT_TRUE(flows.ok());
  EXPECT_EQ(flows->size(), 2u * 6 * 4) << "2 rails, 2(n-1) = 6 steps, 4 hosts each";
  for (const FlowSpec& f : *flows) {
    EXPECT_EQ(t.rail[f.src], t.rail[f.dst]) << "rings stay on their rail";
    EXPECT_EQ(f.bytes, 1'000'000u);
  }
  // Run it: every step waits for the previous one, so the whole takes at least 6 steps.
  auto control = test::cc("none");
  Network net(t, NetConfig{}, *control, 1);
  for (const FlowSpec& f : *flows) ASSERT_TRUE(net.add_flow(f).ok());
  ASSERT_TRUE(net.run(Time::ms(100)));
  Time last;
  for (const Flow& f : net.flows()) last = max(last, f.finish);
  const Time one_step = net.flows()[0].ideal;
  EXPECT_GT(last, one_step * 6);
  EXPECT_LT(last, one_step * 9);
}

TEST(HpccFiles, TopologyRoundTripsAndFlowsImport) {
  SimTopology t = test::dumbbell(4, 100, 400, 2);
  const std::string text = format_hpcc_topology(t);
  EXPECT_EQ(text.substr(0, text.find('\n')), "6 2 6");
  Result<SimTopology> back = parse_hpcc_topology(text, "t.txt");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(back->hosts, 4u);
  EXPECT_EQ(back->links.size(), 6u);
  EXPECT_EQ(format_hpcc_topology(*back), text);
  Result<std::vector<FlowSpec>> flows = parse_hpcc_flows("2\n0 3 3 100 5000 2.0\n2 1 3 100 70 2.000001\n", "f.txt", *back);
  ASSERT_TRUE(flows.ok()) << flows.error().message;
  EXPECT_EQ((*flows)[1].bytes, 70u);
  EXPECT_EQ((*flows)[1].start, Time::us(2'000'001));
}

TEST(HpccFiles, ErrorsNameFileLineAndField) {
  EXPECT_EQ(parse_hpcc_topology("3 1 2\n2\n0 2 100Gbps 1000ns 0\n1 2 fastGbps 1000ns 0\n", "topo.txt").error().message,
            "topo.txt:4: rate: expected a rate such as 100Gbps, got \"fastGbps\"");
  EXPECT_EQ(parse_hpcc_topology("3 1 2\n2\n0 2 100Gbps 1000ns 0\n", "topo.txt").error().message,
            "topo.txt: header announces 2 links, file has 1");
  SimTopology t = test::star(3);
  EXPECT_EQ(parse_hpcc_flows("1\n0 1 3 100 -5 2.0\n", "flow.txt", t).error().message,
            "flow.txt:2: size: expected a positive integer");
  EXPECT_EQ(parse_hpcc_flows("1\n0 3 3 100 5 2.0\n", "flow.txt", t).error().message,
            "flow.txt:2: dst: \"3\" is not a host");
}

TEST(HpccFiles, FctOutputHasTheSimulatorsColumns) {
  auto control = test::cc("none");
  Network net(test::star(2), NetConfig{}, *control, 1);
  ASSERT_TRUE(net.add_flow(test::flow(0, 1, 10'000, Time::us(3))).ok());
  ASSERT_TRUE(net.run(Time::ms(1)));
  const Flow& f = net.flows()[0];
  char want[160];
  std::snprintf(want, sizeof want, "0b000001 0b000101 10000 100 10000 3000 %lld %lld\n",
                static_cast<long long>((f.finish - f.start).ps() / 1000), static_cast<long long>(f.ideal.ps() / 1000));
  EXPECT_EQ(format_hpcc_fct(net), want);
}

}  // namespace
}  // namespace xm::sim
