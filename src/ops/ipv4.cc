#include "ops/ipv4.h"

#include <charconv>

namespace xm::ops {
namespace {

bool parse_number(std::string_view text, uint32_t max, uint32_t& out) {
  if (text.empty() || text.size() > 3 || (text.size() > 1 && text[0] == '0')) return false;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc() && end == text.data() + text.size() && out <= max;
}

}  // namespace

std::string to_string(Ipv4 a) {
  return std::to_string(a.value >> 24) + "." + std::to_string((a.value >> 16) & 255) + "." +
         std::to_string((a.value >> 8) & 255) + "." + std::to_string(a.value & 255);
}

std::string to_string(Prefix p) { return to_string(p.base) + "/" + std::to_string(p.length); }

std::optional<Ipv4> parse_ipv4(std::string_view text) {
  uint32_t value = 0;
  for (int part = 0; part < 4; ++part) {
    size_t dot = part < 3 ? text.find('.') : text.size();
    if (dot == std::string_view::npos) return std::nullopt;
    uint32_t octet = 0;
    if (!parse_number(text.substr(0, dot), 255, octet)) return std::nullopt;
    value = value << 8 | octet;
    text.remove_prefix(part < 3 ? dot + 1 : dot);
  }
  return Ipv4{value};
}

std::optional<Prefix> parse_prefix(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  std::optional<Ipv4> base = parse_ipv4(text.substr(0, slash));
  uint32_t length = 0;
  if (!base || !parse_number(text.substr(slash + 1), 32, length)) return std::nullopt;
  return Prefix{*base, uint8_t(length)};
}

}  // namespace xm::ops
