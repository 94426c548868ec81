// The flow-level engine: fair shares, latencies and dependencies as the packet engine
// has them, without packets.
#include "sim/fluid/fluid_network.h"

#include <gtest/gtest.h>

#include "sim/collective/results.h"
#include "sim/network.h"
#include "sim_fixtures.h"

namespace xm::sim {
namespace {

using test::flow;

TEST(Fluid, AFlowAloneArrivesWhenThePacketEngineSaysAndTwoShareABottleneck) {
  const SimTopology t = test::dumbbell(4, 100, 100);
  NetConfig config;
  FluidNetwork fluid(t, config, 1);
  ASSERT_TRUE(fluid.add_flow(flow(0, 2, 1'000'000)));
  fluid.run(Time::seconds(1));
  auto cc = test::cc("none");
  Network packets(t, config, *cc, 1);
  ASSERT_TRUE(packets.add_flow(flow(0, 2, 1'000'000)));
  packets.run(Time::seconds(1));
  const double alone = fluid.outcomes()[0].received_at.us_f();
  EXPECT_NEAR(alone, packets.outcomes()[0].received_at.us_f(), 0.01 * alone);
  EXPECT_NEAR(fluid.ideal(0).us_f(), alone, 1e-3);

  // Two senders through the one trunk: each at half its rate, so twice as long.
  FluidNetwork shared(t, config, 1);
  ASSERT_TRUE(shared.add_flow(flow(0, 2, 1'000'000)));
  ASSERT_TRUE(shared.add_flow(flow(1, 3, 1'000'000)));
  shared.run(Time::seconds(1));
  for (const FlowOutcome& f : shared.outcomes()) EXPECT_NEAR(f.received_at.us_f(), 2 * alone, 0.05 * alone);
}

TEST(Fluid, AFlowWaitsForWhatItIsAfterAndABarrierPassesAtOnce) {
  const SimTopology t = test::star(3);
  FluidNetwork net(t, NetConfig{}, 1);
  ASSERT_TRUE(net.add_flow(flow(0, 1, 100'000)));
  FlowSpec barrier = flow(1, 1, 0);
  barrier.after = {0};
  ASSERT_TRUE(net.add_flow(barrier));
  FlowSpec next = flow(1, 2, 100'000);
  next.after = {1};
  ASSERT_TRUE(net.add_flow(next));
  EXPECT_FALSE(net.add_flow(flow(2, 2, 10)));  // only a barrier may start and end at one host
  net.run(Time::seconds(1));
  const std::vector<FlowOutcome> out = net.outcomes();
  ASSERT_TRUE(out[2].received);
  EXPECT_EQ(out[1].received_at, out[0].received_at);
  EXPECT_EQ(out[2].start, out[1].received_at);
  EXPECT_EQ(net.counters().flows_done, 3u);
}

}  // namespace
}  // namespace xm::sim
