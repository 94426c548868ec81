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

TEST(Fluid, AConnectionSendsItsMessagesInOrderInBothEngines) {
  // Two messages on one connection: the second sends once the first has sent its last
  // byte, so the first arrives as if alone and the second a drain later; unrelated flows
  // on one port share it instead.
  const SimTopology t = test::star(2);
  FlowSpec first = flow(0, 1, 1'000'000), second = flow(0, 1, 1'000'000);
  first.sport = second.sport = 7;
  second.follows = 0;
  FluidNetwork fluid(t, NetConfig{}, 1);
  auto cc = test::cc("none");
  Network packets(t, NetConfig{}, *cc, 1);
  for (const FlowSpec& f : {first, second}) {
    ASSERT_TRUE(fluid.add_flow(f));
    ASSERT_TRUE(packets.add_flow(f));
  }
  FlowSpec loop = flow(1, 0, 10);
  loop.follows = 2;  // not earlier
  EXPECT_FALSE(fluid.add_flow(loop));
  EXPECT_FALSE(packets.add_flow(loop));
  fluid.run(Time::seconds(1));
  packets.run(Time::seconds(1));
  for (const std::vector<FlowOutcome>& out : {fluid.outcomes(), packets.outcomes()}) {
    const double alone = fluid.ideal(0).us_f();
    EXPECT_NEAR(out[0].received_at.us_f(), alone, 0.02 * alone);
    EXPECT_NEAR(out[1].received_at.us_f(), 2 * alone, 0.05 * alone);
  }
}

}  // namespace
}  // namespace xm::sim
