// Rates and sizes as the testbed's command line spells them.
//
// Rates follow tc(8)'s bit units, case-insensitive: "400mbit", "1.6gbit", "100kbit",
// "9600bit" (k, m, g, t are powers of 1000). tc's byte units ("mbps" means megabytes
// per second) are refused, because they are read as megabits more often than not.
// Sizes are bytes with an optional binary suffix: "4096", "64k", "8M", "1g".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace xm::testbed {

// Bits per second, at least 8 kbit/s and at most 10 Tbit/s.
Result<uint64_t> parse_rate(std::string_view text);

// The shortest tc spelling of `bps`: 400000000 -> "400mbit", 1600000000 -> "1.6gbit".
std::string rate_string(uint64_t bps);

// Bytes; k, m, g are 1024-based.
Result<uint64_t> parse_size(std::string_view text);

}  // namespace xm::testbed
