#include "testbed/units.h"

#include <cctype>
#include <charconv>
#include <cmath>

#include "util/format.h"

namespace xm::testbed {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Splits "1.5gbit" into 1.5 and "gbit"; false when there is no leading number.
bool split_number(std::string_view text, double& number, std::string& unit) {
  size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.')) ++end;
  if (end == 0) return false;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, number);
  if (ec != std::errc() || ptr != text.data() + end || !std::isfinite(number)) return false;
  unit = lower(text.substr(end));
  return true;
}

}  // namespace

Result<uint64_t> parse_rate(std::string_view text) {
  std::string quoted = "\"" + std::string(text) + "\"";
  double number = 0;
  std::string unit;
  if (!split_number(text, number, unit))
    return Error{"rate " + quoted + ": expected a number and a unit, e.g. 400mbit or 1.6gbit"};
  double scale = 0;
  if (unit == "bit") scale = 1;
  else if (unit == "kbit") scale = 1e3;
  else if (unit == "mbit") scale = 1e6;
  else if (unit == "gbit") scale = 1e9;
  else if (unit == "tbit") scale = 1e12;
  else if (unit == "bps" || unit == "kbps" || unit == "mbps" || unit == "gbps" || unit == "tbps")
    return Error{"rate " + quoted + ": tc reads \"" + unit + "\" as bytes per second; write bits, e.g. " +
                 trimmed(number) + unit.substr(0, unit.size() - 3) + "bit"};
  else
    return Error{"rate " + quoted + ": unknown unit \"" + unit + "\"; use bit, kbit, mbit, gbit or tbit"};
  double bps = std::round(number * scale);
  if (bps < 8e3 || bps > 1e13) return Error{"rate " + quoted + ": expected between 8kbit and 10tbit"};
  return static_cast<uint64_t>(bps);
}

std::string rate_string(uint64_t bps) {
  static const char* units[] = {"bit", "kbit", "mbit", "gbit", "tbit"};
  double value = static_cast<double>(bps);
  int u = 0;
  while (u < 4 && value >= 1000) value /= 1000, ++u;
  return trimmed(value, 6) + units[u];
}

Result<uint64_t> parse_size(std::string_view text) {
  std::string quoted = "\"" + std::string(text) + "\"";
  double number = 0;
  std::string unit;
  if (!split_number(text, number, unit)) return Error{"size " + quoted + ": expected bytes, e.g. 4096, 64k or 8M"};
  double scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else return Error{"size " + quoted + ": unknown unit \"" + unit + "\"; use k, M or G (1024-based)"};
  double bytes = std::round(number * scale);
  if (bytes < 1 || bytes > 1e12) return Error{"size " + quoted + ": expected between 1 byte and 1 TB"};
  return static_cast<uint64_t>(bytes);
}

}  // namespace xm::testbed
