#include "sim/workload/cdf.h"

#include <algorithm>
#include <fstream>
#include <sstream>

namespace xm::sim {

Result<FlowSizeCdf> FlowSizeCdf::parse(std::string_view text, const std::string& source) {
  FlowSizeCdf cdf;
  cdf.source_ = source;
  std::istringstream in{std::string(text)};
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = source + ":" + std::to_string(number) + ": ";
    if (line.find_first_not_of(" \t\r") == std::string::npos || line[line.find_first_not_of(" \t")] == '#') continue;
    std::istringstream fields(line);
    double bytes = 0, percent = 0;
    std::string extra;
    if (!(fields >> bytes >> percent)) return Error{where + "expected \"<flow size in bytes> <cumulative percent>\""};
    if (fields >> extra) return Error{where + "unexpected \"" + extra + "\" after the two numbers"};
    if (bytes < 0) return Error{where + "flow size must not be negative"};
    if (percent < 0 || percent > 100) return Error{where + "cumulative percent must be in [0, 100]"};
    if (!cdf.bytes_.empty()) {
      if (bytes < cdf.bytes_.back()) return Error{where + "sizes must ascend"};
      if (percent < cdf.percent_.back()) return Error{where + "cumulative percent must not decrease"};
    }
    cdf.bytes_.push_back(bytes);
    cdf.percent_.push_back(percent);
  }
  if (cdf.bytes_.size() < 2) return Error{source + ": a distribution needs at least two points"};
  if (cdf.percent_.back() != 100) return Error{source + ":" + std::to_string(number) + ": the last point must be at 100 percent"};
  if (cdf.bytes_.back() < 1) return Error{source + ": the largest flow size must be at least 1 byte"};
  return cdf;
}

Result<FlowSizeCdf> FlowSizeCdf::load(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open"};
  std::stringstream text;
  text << in.rdbuf();
  return parse(text.str(), path);
}

uint64_t FlowSizeCdf::sample(Random& rng) const {
  const double u = rng.uniform() * 100;
  // The first point whose cumulative percent exceeds u.
  const size_t i = size_t(std::upper_bound(percent_.begin(), percent_.end(), u) - percent_.begin());
  double bytes;
  if (i == 0) bytes = bytes_.front();
  else if (i >= percent_.size()) bytes = bytes_.back();
  else bytes = bytes_[i - 1] + (u - percent_[i - 1]) / (percent_[i] - percent_[i - 1]) * (bytes_[i] - bytes_[i - 1]);
  return std::max<uint64_t>(1, uint64_t(bytes + 0.5));
}

double FlowSizeCdf::mean() const {
  double sum = 0;
  for (size_t i = 1; i < bytes_.size(); ++i)
    sum += (percent_[i] - percent_[i - 1]) / 100 * (bytes_[i] + bytes_[i - 1]) / 2;
  return std::max(sum, 1.0);
}

}  // namespace xm::sim
