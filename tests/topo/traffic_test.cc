#include "topo/traffic.h"

#include <gtest/gtest.h>

#include "test_fabrics.h"
#include "topo/generate.h"

namespace xm::topo {
namespace {

using test_support::build;

TEST(Traffic, RailRingsStayInTheRailExceptBetweenSegments) {
  Fabric f = build(default_spec());  // 128 servers in 2 segments of 64
  std::vector<Demand> d = pattern_demands(f, Pattern::kRailRings).value();
  ASSERT_EQ(d.size(), 1024u);
  TrafficShare t = classify_traffic(f, d);
  EXPECT_DOUBLE_EQ(t.intra_server, 0);
  EXPECT_DOUBLE_EQ(t.cross, 8 * 2) << "each rail's ring crosses between the two segments twice";
  EXPECT_DOUBLE_EQ(t.one_tor_hop, 1024 - 16);
}

TEST(Traffic, AllToAllCountsEveryOrderedPair) {
  GenOptions o;
  o.gpus = 64;
  Fabric f = build(generate(o).value());  // one segment of 8 servers
  TrafficShare t = classify_traffic(f, pattern_demands(f, Pattern::kAllToAll).value());
  EXPECT_DOUBLE_EQ(t.intra_server, 64 * 7);        // 7 peers in the same server
  EXPECT_DOUBLE_EQ(t.one_tor_hop, 64 * 7);         // 7 peers with the same local index
  EXPECT_DOUBLE_EQ(t.cross, 64 * (63 - 14));
  GenOptions big;
  big.gpus = 102400;
  EXPECT_FALSE(pattern_demands(build(generate(big).value()), Pattern::kAllToAll).ok());
}

TEST(Traffic, PatternNames) {
  EXPECT_EQ(parse_pattern("rail-rings").value(), Pattern::kRailRings);
  EXPECT_FALSE(parse_pattern("butterfly").ok());
}

TEST(Traffic, CsvAcceptsNamesIndicesCommentsAndHeader) {
  Fabric f = build(default_spec());
  Result<std::vector<Demand>> d =
      parse_traffic_csv(f, "src,dst,bytes\n# a comment\nsrv0/gpu0, srv1/gpu0 ,1e6\n\n3,gpu75,5\r\n", "m.csv");
  ASSERT_TRUE(d.ok()) << d.error().message;
  ASSERT_EQ(d->size(), 2u);
  EXPECT_EQ((*d)[0].src, 0u);
  EXPECT_EQ((*d)[0].dst, 8u);
  EXPECT_DOUBLE_EQ((*d)[0].bytes, 1e6);
  EXPECT_EQ((*d)[1].dst, 75u);
}

TEST(Traffic, CsvErrorsNameLineColumnAndField) {
  Fabric f = build(default_spec());
  struct Case {
    const char* text;
    const char* expected;
  } cases[] = {
      {"srv0/gpu0,srv1/gpu0\n", "m.csv:1: expected three fields src,dst,bytes"},
      {"0,1,2,3\n", "m.csv:1: expected three fields"},
      {"0,1,2\nsrv0/gpu0,srv1/nic0,1\n", "m.csv:2:11: dst: srv1/nic0 is not an accelerator"},
      {"nobody,1,2\n", "m.csv:1:1: src: no node named \"nobody\""},
      {"0,1,lots\n", "m.csv:1:5: bytes: expected a number of bytes, got \"lots\""},
      {"0,1,-4\n", "m.csv:1:5: bytes: expected a number of bytes"},
  };
  for (const Case& c : cases) {
    Result<std::vector<Demand>> d = parse_traffic_csv(f, c.text, "m.csv");
    ASSERT_FALSE(d.ok()) << c.text;
    EXPECT_NE(d.error().message.find(c.expected), std::string::npos) << d.error().message;
  }
}

}  // namespace
}  // namespace xm::topo
