// What a replayed collective measured: its completion time and nccl-tests' algbw and
// busbw, and timelines per rank and per rail, as tables (CSV) and a plot (SVG).
#pragma once

#include <string>
#include <vector>

#include "sim/collective/collective.h"
#include "sim/flow.h"

namespace xm::sim {

struct CollectiveResult {
  std::string name, op, algorithm;
  int ranks = 0;
  uint64_t bytes = 0;
  size_t flows = 0, finished = 0;
  double start_us = 0, end_us = 0;  // its first flow's start, its last byte's arrival
  double time_us = 0;
  double algbw_gbs = 0, busbw_gbs = 0;  // GB/s (10^9 bytes), as nccl-tests prints them
};

// One result per replayed collective, from the outcomes of a run's flows (either engine).
std::vector<CollectiveResult> collective_results(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays);

// collective,op,algorithm,ranks,bytes,flows,finished,start_us,end_us,time_us,algbw_gbs,busbw_gbs
std::string collectives_csv(const std::vector<CollectiveResult>& results, const std::string& cc);
// Per collective and rank: collective,rank,first_send_us,last_arrival_us,bytes_sent,bytes_received
std::string ranks_csv(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays);
// Throughput per rail (and inside servers) in `bins` equal steps of the run, per rank
// sending there (so it reads against one NIC's speed): t_us,rail,gbps — rail "intra" is
// the servers' internal fabric.
std::string rails_csv(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays, int bins = 100);
// The same as lines over time, one per rail.
std::string rails_svg(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays, const std::string& title,
                      int bins = 100);
// A table for the terminal: one line per collective.
std::string collectives_text(const std::vector<CollectiveResult>& results, const std::string& cc);

}  // namespace xm::sim
