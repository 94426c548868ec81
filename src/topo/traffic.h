// Traffic matrices to classify with classify_traffic (metrics.h): standard patterns,
// and matrices people write as CSV.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "topo/fabric.h"
#include "topo/metrics.h"
#include "util/result.h"

namespace xm::topo {

enum class Pattern {
  kRing,       // one ring over every accelerator in global order (a flat ring all-reduce step)
  kRailRings,  // one ring per local index across all servers (rail-aligned ring all-reduce)
  kAllToAll,   // every accelerator to every other, equal bytes
};

// The names the command line uses: "ring", "rail-rings", "all-to-all".
Result<Pattern> parse_pattern(std::string_view name);

// One byte per demand. Error for all-to-all above kMaxAllToAll accelerators (its
// matrix grows with the square).
inline constexpr uint32_t kMaxAllToAll = 16384;
Result<std::vector<Demand>> pattern_demands(const Fabric& fabric, Pattern pattern);

// Lines of "src,dst,bytes"; src and dst in any form Fabric::find accepts. Blank lines,
// lines starting with '#', and a first line "src,dst,bytes" are skipped. Errors name
// the source, line and column.
Result<std::vector<Demand>> parse_traffic_csv(const Fabric& fabric, std::string_view text, const std::string& source);

}  // namespace xm::topo
