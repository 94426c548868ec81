// What the dashboard's JSON says about a plan and the controller's health: every device
// and cable once, each with the state and incident the health gives it, healthy otherwise;
// and the page itself, compiled in whole.
#include "ops/dashboard.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ops/probe_paths.h"
#include "ops/test_specs.h"

namespace xm::ops {
namespace {

TEST(Dashboard, FabricJsonHasEveryDeviceAndCableWithItsHealth) {
  Result<FabricPlan> p = make_plan(ops_test::rail_spec(6, 4, 2), PlanOptions{});
  ASSERT_TRUE(p) << p.error().message;
  const FabricPlan& plan = *p;
  CableIndex cables(plan);
  const Cable* lossy = cables.at("tor1", "spine0");
  const Cable* drained = cables.at("tor2", "spine1");
  ASSERT_TRUE(lossy && drained);
  FabricHealth health;
  health.cables[lossy->id] = {"fault", "loss", 7};
  health.cables[drained->id] = {"drained", "", 5};
  health.devices["h3"] = {"host", "agent-starved", 8};

  const nlohmann::json j = nlohmann::json::parse(fabric_json(plan, health));
  ASSERT_EQ(j["devices"].size(), plan.devices.size());  // 6 hosts, 4 ToRs, 2 spines
  ASSERT_EQ(j["cables"].size(), plan.cables.size());    // 24 host cables, 8 uplinks
  size_t unhealthy = 0;
  for (const nlohmann::json& c : j["cables"]) {
    const std::string name = c["name"];
    if (name == "tor1:spine0 - spine0:tor1") {
      EXPECT_EQ(c["state"], "fault");
      EXPECT_EQ(c["fault"], "loss");
      EXPECT_EQ(c["incident"], 7);
    } else if (name == "tor2:spine1 - spine1:tor2") {
      EXPECT_EQ(c["state"], "drained");
      EXPECT_EQ(c["incident"], 5);
    } else {
      EXPECT_EQ(c["state"], "ok") << name;
      EXPECT_FALSE(c.contains("incident")) << name;
    }
    unhealthy += c["state"] != "ok";
    EXPECT_EQ(c["tier"], c["a"]["device"].get<std::string>()[0] == 'h' ? "host-tor" : "tor-spine") << name;
  }
  EXPECT_EQ(unhealthy, 2u);
  for (const nlohmann::json& d : j["devices"]) {
    EXPECT_EQ(d["state"], d["name"] == "h3" ? "host" : "ok") << d.dump();
    if (d["role"] == "host") {
      ASSERT_EQ(d["nics"].size(), 4u);
      EXPECT_EQ(d["nics"][2]["rail"], 2);
    }
  }
}

TEST(Dashboard, ThePageIsCompiledInWhole) {
  const std::string& page = dashboard_page();
  EXPECT_EQ(page.rfind("<!doctype html>", 0), 0u);
  EXPECT_NE(page.find("/api/fabric"), std::string::npos);
  EXPECT_NE(page.find("\xe2\x80\x94"), std::string::npos);  // UTF-8 (the em dash in its title) intact
  EXPECT_EQ(page.substr(page.size() - 8), "</html>\n");
}

}  // namespace
}  // namespace xm::ops
