// Round trips: a spec written and read back is equal, and written again is identical.
#include <gtest/gtest.h>

#include "topo/generate.h"
#include "test_fabrics.h"
#include "topo/spec_io.h"

namespace xm::topo {
namespace {

ClusterSpec odd_spec() {  // every optional part present, nothing uniform
  ClusterSpec s = default_spec();
  s.name = "odd \"quoted\" name: yes";
  s.server.nics = {{"mlx5_0", 0, 400}, {"mlx5_1", 3, 200.5}, {"eth2", 3, 200.5}};
  s.server.nic_ports = 2;
  s.fabric.tor.servers = 16;
  s.fabric.tor.uplinks = 32;
  s.fabric.agg->tors = 32;
  s.fabric.agg->count = 8;
  s.frontend = FrontendSpec{};
  s.frontend->nic_gbps = 25;
  return s;
}

class RoundTrip : public ::testing::TestWithParam<std::string> {
 protected:
  ClusterSpec spec() const {
    const std::string& p = GetParam();
    if (p == "default") return default_spec();
    if (p == "odd") return odd_spec();
    if (p == "102400") {
      GenOptions o;
      o.gpus = 102400;
      return generate(o).value();
    }
    return test_support::example_spec(p);
  }
};

TEST_P(RoundTrip, YamlReadsBackEqualAndWritesIdentically) {
  ClusterSpec original = spec();
  std::string text = spec_to_yaml(original);
  Result<ClusterSpec> back = parse_spec(text, "roundtrip.yaml");
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  EXPECT_EQ(*back, original) << text;
  EXPECT_EQ(spec_to_yaml(*back), text);
}

TEST_P(RoundTrip, JsonReadsBackEqualAndWritesIdentically) {
  ClusterSpec original = spec();
  std::string text = spec_to_json(original);
  Result<ClusterSpec> back = parse_spec(text, "roundtrip.json");
  ASSERT_TRUE(back.ok()) << back.error().message << "\n" << text;
  EXPECT_EQ(*back, original) << text;
  EXPECT_EQ(spec_to_json(*back), text);
}

INSTANTIATE_TEST_SUITE_P(Specs, RoundTrip,
                         ::testing::Values("default", "odd", "102400", "hpcc-fat-tree-320.yaml",
                                           "hpn-dual-plane.yaml"),
                         [](const auto& info) {
                           std::string n = info.param.substr(0, info.param.find('.'));
                           for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(SpecIo, ShorthandNicCountExpandsToOneNicPerRail) {
  Result<ClusterSpec> s = parse_spec(R"(
servers: 4
server: {accelerators: 4, nics: 4, nic_gbps: 200}
fabric:
  kind: rail-optimized
  tor: {ports: 8, servers: 4}
)", "short.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  ASSERT_EQ(s->server.nics.size(), 4u);
  for (uint32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(s->server.nics[i].rail, i);
    EXPECT_EQ(s->server.nics[i].gbps, 200);
    EXPECT_EQ(s->server.nics[i].name, "nic" + std::to_string(i));
  }
  EXPECT_FALSE(s->fabric.agg.has_value());
}

TEST(SpecIo, OversubscriptionBecomesUplinkCount) {
  // 32 servers × 400 Gbit/s down per ToR, 3:1 over 400 Gbit/s uplinks -> 11 links,
  // rounded up to 12 so they spread evenly over 4 aggs.
  Result<ClusterSpec> s = parse_spec(R"(
servers: 64
server: {accelerators: 8, nics: 8, nic_gbps: 400}
fabric:
  kind: rail-optimized
  tor: {ports: 64, servers: 32, oversubscription: 3}
  agg: {ports: 64, tors: 16, count: 4}
)", "over.yaml");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->fabric.tor.uplinks, 12u);
}

TEST(SpecIo, JsonInputIsAccepted) {
  Result<ClusterSpec> s = parse_spec(
      R"({"servers": 2, "fabric": {"kind": "clos", "tor": {"ports": 32, "servers": 2}}})", "in.json");
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(s->servers, 2u);
  EXPECT_EQ(s->fabric.kind, FabricKind::kClos);
}

TEST(SpecIo, MissingFileSaysSo) {
  Result<ClusterSpec> s = load_spec("/nonexistent/cluster.yaml");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("/nonexistent/cluster.yaml: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace xm::topo
