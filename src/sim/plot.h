// Slowdown against flow size, one line per algorithm, as a self-contained SVG (no
// plotting package needed): two panels, p50 and p99, log-scaled axes.
#pragma once

#include <string>
#include <vector>

#include "sim/report.h"

namespace xm::sim {

std::string slowdown_svg(const std::vector<Report>& reports, const std::string& title);

}  // namespace xm::sim
