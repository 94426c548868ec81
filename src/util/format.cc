#include "util/format.h"

#include <cmath>
#include <cstdio>

namespace xm {

std::string with_commas(uint64_t value) {
  std::string digits = std::to_string(value), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

std::string formatted(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

std::string trimmed(double value, int digits) {
  char buf[64];
  int whole = value == 0 ? 1 : std::max(1, int(std::floor(std::log10(std::fabs(value)))) + 1);
  std::snprintf(buf, sizeof buf, "%.*f", std::max(0, digits - whole), value);
  std::string s = buf;
  if (s.find('.') != std::string::npos) {
    while (s.back() == '0') s.pop_back();
    if (s.back() == '.') s.pop_back();
  }
  return s;
}

std::string bandwidth(double gbps) {
  static const char* units[] = {"Gbit/s", "Tbit/s", "Pbit/s", "Ebit/s"};
  int u = 0;
  while (u < 3 && std::fabs(gbps) >= 1000) gbps /= 1000, ++u;
  return trimmed(gbps) + " " + units[u];
}

std::string ratio(double value) { return trimmed(std::round(value * 100) / 100, 6) + ":1"; }

}  // namespace xm
