// Malformed specs: each gives one message naming the file, line, column and field and
// what was expected, and nothing is built from them.
#include <gtest/gtest.h>

#include "topo/spec_io.h"

namespace xm::topo {
namespace {

struct BadSpec {
  const char* name;
  const char* text;
  const char* expected;  // a substring of the message: location, field and complaint
};

// A valid spec of the same shape as the cases below: the reader accepts the shape.
constexpr const char* kGood = R"(name: small
servers: 8
server:
  accelerators: 8
  nics: 8
  nic_gbps: 400
fabric:
  kind: rail-optimized
  tor: {ports: 16, servers: 4, uplinks: 4}
  agg: {ports: 32, tors: 16, count: 2}
)";

const BadSpec kBadSpecs[] = {
    {"WrongType", R"(servers: eight
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:1:10: servers: expected a whole number, got \"eight\""},
    {"NegativeNumber", R"(servers: -3
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:1:10: servers: expected a whole number, got \"-3\""},
    {"NumberTooLarge", R"(servers: 99999999999
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:1:10: servers: expected a whole number up to 4294967295"},
    {"MapWhereNumberBelongs", R"(servers: {count: 3}
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:1:10: servers: expected a whole number, got a mapping"},
    {"UnknownField", R"(servers: 8
server:
  accelerators: 8
  nic_speed: 400
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:4:3: server.nic_speed: unknown field (expected one of: accelerators, nics, nic_gbps, nic_ports, pcie, intra)"},
    {"UnknownNestedField", R"(servers: 8
fabric:
  kind: clos
  tor: {servers: 1, radix: 64}
)", "bad.yaml:4:21: fabric.tor.radix: unknown field"},
    {"MissingServers", R"(name: x
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:1:1: servers: missing field: how many servers the cluster has"},
    {"MissingFabric", "servers: 4\n", "bad.yaml:1:1: fabric: missing field"},
    {"MissingNicRail", R"(servers: 1
server:
  nics:
    - {name: mlx5_0, gbps: 400}
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:4:7: server.nics[0].rail: missing field: which rail this NIC is on"},
    {"MoreNicsThanTorPortsAllow", R"(servers: 64
server: {accelerators: 8, nics: 8, nic_gbps: 400}
fabric:
  kind: clos
  tor:
    ports: 64
    servers: 8
    uplinks: 32
  agg: {ports: 64, tors: 8, count: 32}
)", "bad.yaml:6:5: fabric.tor.ports: 8 servers × 8 NIC port(s) each + 32 uplinks need 96 ports, but a ToR has 64"},
    {"AggPortsTooFew", R"(servers: 64
fabric:
  kind: rail-optimized
  tor: {ports: 64, servers: 32, uplinks: 32}
  agg:
    ports: 8
    tors: 16
    count: 4
)", "bad.yaml:6:5: fabric.agg.ports: 16 ToRs × 8 link(s) each + 0 uplinks need 128 ports, but an aggregation switch has 8"},
    {"MissingCoreForPods", R"(servers: 64
fabric:
  kind: rail-optimized
  tor: {ports: 64, servers: 8, uplinks: 8}
  agg: {ports: 64, tors: 8, count: 8}
)", "bad.yaml:2:1: fabric.core: missing: 8 pods of 8 ToRs need a core tier to reach each other"},
    {"DuplicateNicNames", R"(servers: 1
server:
  accelerators: 2
  nics:
    - {name: mlx5_0, rail: 0, gbps: 400}
    - {name: mlx5_0, rail: 1, gbps: 400}
fabric: {kind: rail-optimized, tor: {servers: 1}}
)", "bad.yaml:6:8: server.nics[1].name: duplicate NIC name \"mlx5_0\" (also server.nics[0])"},
    {"DuplicateField", R"(servers: 8
servers: 16
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:2:1: servers: duplicate field"},
    {"BadYaml", R"(servers: 8
fabric: {kind: clos, tor: [servers: 1}
)", "bad.yaml:2:"},
    {"BadYamlIndentation", "servers: 8\n  fabric: x\n", "bad.yaml:2:9: bad YAML:"},
    {"UnknownKind", R"(servers: 8
fabric: {kind: dragonfly, tor: {servers: 1}}
)", "bad.yaml:2:10: fabric.kind: expected rail-optimized or clos, got \"dragonfly\""},
    {"ZeroServers", R"(servers: 0
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:1:1: servers: expected 1 to 1048576 servers"},
    {"PlanesWithoutPorts", R"(servers: 8
fabric: {kind: clos, planes: 2, tor: {servers: 8}}
)", "bad.yaml:2:22: fabric.planes: 2 planes need every NIC to have a multiple of 2 ports"},
    {"UplinksAndOversubscription", R"(servers: 8
fabric:
  kind: clos
  tor: {servers: 1, uplinks: 4, oversubscription: 2}
)", "bad.yaml:4:33: fabric.tor.oversubscription: give uplinks or oversubscription, not both"},
    {"OversubscriptionBelowOne", R"(servers: 8
fabric:
  kind: rail-optimized
  tor: {servers: 8, oversubscription: 0.5}
  agg: {tors: 8, count: 2}
)", "bad.yaml:4:21: fabric.tor.oversubscription: expected a down:up ratio from 1"},
    {"UplinksNotSpreadable", R"(servers: 16
fabric:
  kind: rail-optimized
  tor: {ports: 64, servers: 8, uplinks: 10}
  agg: {ports: 64, tors: 16, count: 4}
)", "bad.yaml:4:32: fabric.tor.uplinks: 10 uplinks cannot be spread evenly over 4 aggregation switches per pod"},
    {"NicGbpsWithList", R"(servers: 1
server:
  nic_gbps: 100
  nics: [{rail: 0, gbps: 400}]
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:3:3: server.nic_gbps: applies to the count form of server.nics only"},
    {"OversubscriptionWithoutAggTier", R"(servers: 8
fabric:
  kind: clos
  tor: {servers: 8, oversubscription: 2}
)", "bad.yaml:4:21: fabric.tor.oversubscription: needs an aggregation tier (fabric.agg)"},
    {"NicNamedLikeAnAccelerator", R"(servers: 1
server:
  accelerators: 1
  nics: [{name: gpu0, rail: 0, gbps: 400}]
fabric: {kind: clos, tor: {servers: 1}}
)", "bad.yaml:4:11: server.nics[0].name: expected a device name of letters"},
    {"EmptyDocument", "# nothing here\n", "bad.yaml: empty document"},
    {"TopLevelList", "- servers: 8\n", "bad.yaml:1:1: expected a mapping, got a list"},
    {"AbsurdSize", R"(servers: 1000000
server: {accelerators: 256}
fabric: {kind: rail-optimized, tor: {ports: 4096, servers: 1, uplinks: 8}, agg: {ports: 4096, tors: 8, count: 8}, core: {ports: 4096, count: 8}}
)", "bad.yaml:1:1: servers: the fabric would have about"},
};

void PrintTo(const BadSpec& bad, std::ostream* os) { *os << bad.name; }

class Malformed : public ::testing::TestWithParam<BadSpec> {};

TEST_P(Malformed, NamesFileLineFieldAndExpectation) {
  const BadSpec& bad = GetParam();
  Result<ClusterSpec> spec = parse_spec(bad.text, "bad.yaml");
  ASSERT_FALSE(spec.ok()) << "accepted:\n" << bad.text;
  const std::string& message = spec.error().message;
  EXPECT_NE(message.find(bad.expected), std::string::npos)
      << "message:  " << message << "\nexpected: " << bad.expected;
  EXPECT_EQ(message.find('\n'), std::string::npos) << "one line: " << message;
}

INSTANTIATE_TEST_SUITE_P(Specs, Malformed, ::testing::ValuesIn(kBadSpecs),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(Malformed, TheBaseOfTheseCasesIsValid) {
  Result<ClusterSpec> spec = parse_spec(kGood, "good.yaml");
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->servers, 8u);
}

}  // namespace
}  // namespace xm::topo
