// An empirical flow-size distribution: points "<bytes> <cumulative percent>", sizes
// ascending, the last at 100 (the format of the HPCC simulator's traffic generator and
// of /work/shared/data/flow-size-cdf). Sampling draws u in [0, 100) and interpolates
// linearly between the two points around it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/random.h"
#include "util/result.h"

namespace xm::sim {

class FlowSizeCdf {
 public:
  // Errors name the source and line: "web.txt:3: sizes must ascend (20000 after 30000)".
  static Result<FlowSizeCdf> parse(std::string_view text, const std::string& source);
  static Result<FlowSizeCdf> load(const std::string& path);

  uint64_t sample(Random& rng) const;  // >= 1
  double mean() const;                 // of the interpolated distribution
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::vector<double> bytes_, percent_;
};

}  // namespace xm::sim
