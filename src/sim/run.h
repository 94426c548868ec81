// Running a scenario: one simulation per algorithm on the same flows (or one with the
// flow-level engine), then the reports, the HPCC-format FCT files and the plots. `xm sim run` is a thin shell around this.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "sim/report.h"
#include "sim/scenario.h"
#include "util/result.h"

namespace xm::sim {

// Called about every million events and once when an algorithm's run ends.
struct Progress {
  std::string cc;
  size_t run = 0, runs = 0;      // which algorithm of how many
  Time now, traffic_end;         // simulated time, and when the last flow starts
  size_t flows_done = 0, flows = 0;
  uint64_t events = 0;
  double wall_seconds = 0;       // of this algorithm's run
  bool finished = false;
};

// Packets (every packet through queues, PFC and a congestion control) or flows (each
// flow at its max-min fair share; fluid/fluid_network.h).
enum class EngineKind { kPacket, kFlow };

struct RunSettings {
  EngineKind engine = EngineKind::kPacket;
  std::vector<std::string> cc;   // overrides the scenario's list when not empty (packet engine)
  std::string out_dir;           // where to write results; empty: nothing written
  std::string fct_file;          // also the (last) algorithm's HPCC-format FCT file here, if set
  std::function<void(const Progress&)> progress;
};

// Runs every algorithm in turn. Writes, under out_dir: <cc>/fct.txt (HPCC format),
// summary.csv, slowdown.csv, results.json and slowdown.svg.
Result<std::vector<Report>> run_scenario(const Scenario& scenario, const RunSettings& settings);
// The same on the scenario's topology, already built (scenario_topology): for callers that
// run many scenarios on one fabric.
Result<std::vector<Report>> run_scenario(const Scenario& scenario, const SimTopology& topology,
                                         const RunSettings& settings);

}  // namespace xm::sim
