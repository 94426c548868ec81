// Rates and sizes as the command line spells them.
#include <gtest/gtest.h>

#include "testbed/units.h"

namespace xm::testbed {
namespace {

TEST(Rate, TcBitUnits) {
  EXPECT_EQ(*parse_rate("400mbit"), 400'000'000u);
  EXPECT_EQ(*parse_rate("1.6gbit"), 1'600'000'000u);
  EXPECT_EQ(*parse_rate("100Kbit"), 100'000u);
  EXPECT_EQ(*parse_rate("9600bit"), 9'600u);
  EXPECT_EQ(*parse_rate("1TBIT"), 1'000'000'000'000u);
}

TEST(Rate, RefusesBytesAndNonsense) {
  Result<uint64_t> bytes = parse_rate("400mbps");
  ASSERT_FALSE(bytes.ok());
  EXPECT_NE(bytes.error().message.find("bytes per second"), std::string::npos) << bytes.error().message;
  EXPECT_NE(bytes.error().message.find("400mbit"), std::string::npos) << bytes.error().message;
  for (const char* bad : {"", "fast", "400", "mbit", "-1mbit", "1.2.3mbit", "400 mbit", "1bit", "20tbit"})
    EXPECT_FALSE(parse_rate(bad).ok()) << bad;
}

TEST(Rate, ShortestSpellingRoundTrips) {
  EXPECT_EQ(rate_string(400'000'000), "400mbit");
  EXPECT_EQ(rate_string(1'600'000'000), "1.6gbit");
  EXPECT_EQ(rate_string(8'000), "8kbit");
  EXPECT_EQ(rate_string(123'456'789), "123.457mbit");
  for (uint64_t bps : {8'000ull, 200'000'000ull, 3'200'000'000ull}) EXPECT_EQ(*parse_rate(rate_string(bps)), bps);
}

TEST(Size, BinarySuffixes) {
  EXPECT_EQ(*parse_size("4096"), 4096u);
  EXPECT_EQ(*parse_size("64k"), 65536u);
  EXPECT_EQ(*parse_size("8M"), 8u << 20);
  EXPECT_EQ(*parse_size("1G"), 1u << 30);
  EXPECT_EQ(*parse_size("1.5k"), 1536u);
  for (const char* bad : {"", "0", "x", "5q", "-3"}) EXPECT_FALSE(parse_size(bad).ok()) << bad;
}

}  // namespace
}  // namespace xm::testbed
