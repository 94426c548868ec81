// IPv4 addresses and prefixes as the plan hands them out: plain numbers, printed and
// parsed in dotted-quad form.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace xm::ops {

struct Ipv4 {
  uint32_t value = 0;
  bool operator==(const Ipv4&) const = default;
  auto operator<=>(const Ipv4&) const = default;
};

struct Prefix {
  Ipv4 base;
  uint8_t length = 32;
  bool operator==(const Prefix&) const = default;
  bool contains(Ipv4 address) const {
    uint32_t mask = length == 0 ? 0 : ~uint32_t{0} << (32 - length);
    return (address.value & mask) == (base.value & mask);
  }
};

std::string to_string(Ipv4 address);   // "10.77.3.1"
std::string to_string(Prefix prefix);  // "10.77.3.0/24"
// "a.b.c.d" (no leading zeros, each part 0-255); nullopt otherwise.
std::optional<Ipv4> parse_ipv4(std::string_view text);
// "a.b.c.d/n"; nullopt otherwise.
std::optional<Prefix> parse_prefix(std::string_view text);

}  // namespace xm::ops
