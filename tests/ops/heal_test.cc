// What healing plans for each kind of finding, on a 6 x 4 rail fabric with two spines:
// which BGP sessions it shuts (both ends of a cable, each naming the other's address),
// which rails it advises against, and what it refuses to drain.
#include "ops/heal.h"

#include <gtest/gtest.h>

#include "ops/probe_paths.h"
#include "ops/test_specs.h"

namespace xm::ops {
namespace {

class HealTest : public ::testing::Test {
 protected:
  void SetUp() override {
    Result<FabricPlan> p = make_plan(ops_test::rail_spec(6, 4, 2), PlanOptions{});
    ASSERT_TRUE(p) << p.error().message;
    plan_ = std::move(p).value();
  }

  Finding on(const std::string& device, const std::string& port, const std::string& fault) const {
    CableIndex cables(plan_);
    const Cable* c = cables.at(device, port);
    EXPECT_NE(c, nullptr) << device << ":" << port;
    return Finding{cables.name(c->id), fault, true, "", {c->id}, false};
  }

  std::string address(const std::string& device, const std::string& port) const {
    return to_string(plan_.find(device)->find_port(port)->address->base);
  }

  FabricPlan plan_;
};

TEST_F(HealTest, ALossyUplinkIsDrainedAtBothEnds) {
  HealPlan h = plan_heal(plan_, on("tor1", "spine0", "loss"), {});
  ASSERT_EQ(h.drained.size(), 1u);
  EXPECT_EQ(h.drained[0].name, "tor1:spine0 - spine0:tor1");
  const std::vector<BgpSession> want{{"tor1", plan_.find("tor1")->asn, address("spine0", "tor1")},
                                     {"spine0", plan_.find("spine0")->asn, address("tor1", "spine0")}};
  EXPECT_EQ(h.sessions(), want);
  EXPECT_TRUE(h.avoid.empty());
  EXPECT_TRUE(h.kept.empty());
}

TEST_F(HealTest, EveryClassRoutingMissesIsDrainedAndNoneItHandles) {
  for (const char* fault : {"loss", "blackhole", "degraded", "flapping", "mtu"})
    EXPECT_EQ(plan_heal(plan_, on("tor0", "spine1", fault), {}).drained.size(), 1u) << fault;
  for (const char* fault : {"link-down", "port-down", "switch-down"})
    EXPECT_TRUE(plan_heal(plan_, on("tor0", "spine1", fault), {}).empty()) << fault;
  Finding host = on("tor0", "spine1", "loss");
  host.network = false;
  EXPECT_TRUE(plan_heal(plan_, host, {}).empty());
}

TEST_F(HealTest, AHostCableOrNicGetsItsRailAdvisedAgainst) {
  for (const char* fault : {"loss", "nic-down", "link-down"}) {
    HealPlan h = plan_heal(plan_, on("h3", "nic1", fault), {});
    EXPECT_TRUE(h.drained.empty()) << fault;
    ASSERT_EQ(h.avoid.size(), 1u) << fault;
    EXPECT_EQ(h.avoid[0].nic, "h3/nic1");
    EXPECT_EQ(h.avoid[0].address, address("h3", "nic1"));
  }
}

// Two ToRs drained on different spines would share none: their rails' traffic has nowhere
// to cross. The second drain is refused and says why; on the same spine both may go.
TEST_F(HealTest, TwoSwitchesKeepASpineInCommon) {
  HealPlan first = plan_heal(plan_, on("tor1", "spine1", "loss"), {});
  ASSERT_EQ(first.drained.size(), 1u);
  HealPlan second = plan_heal(plan_, on("tor3", "spine0", "loss"), first.sessions());
  EXPECT_TRUE(second.drained.empty());
  EXPECT_NE(second.kept.find("tor3 would share no spine with tor1"), std::string::npos) << second.kept;
  EXPECT_EQ(plan_heal(plan_, on("tor3", "spine1", "loss"), first.sessions()).drained.size(), 1u);
}

TEST_F(HealTest, ASwitchKeepsItsLastUplink) {
  // tor2's uplink to spine0 already drained: the one to spine1 stays, and says why.
  HealPlan first = plan_heal(plan_, on("tor2", "spine0", "loss"), {});
  HealPlan second = plan_heal(plan_, on("tor2", "spine1", "loss"), first.sessions());
  EXPECT_TRUE(second.drained.empty());
  EXPECT_NE(second.kept.find("tor2's last uplink"), std::string::npos) << second.kept;
  // Twins named together ("A or B") on different ToRs: both drained, each keeps another.
  CableIndex cables(plan_);
  Finding twins{"", "loss", true, "", {cables.at("tor0", "spine1")->id, cables.at("tor1", "spine1")->id}, false};
  EXPECT_EQ(plan_heal(plan_, twins, {}).drained.size(), 2u);
  // A session shut by an earlier drain is not shut twice.
  HealPlan again = plan_heal(plan_, on("tor2", "spine0", "blackhole"), first.sessions());
  EXPECT_TRUE(again.empty());
}

}  // namespace
}  // namespace xm::ops
