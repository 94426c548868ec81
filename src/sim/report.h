// What one run measured, summarised for people (a table, a plot) and programs (CSV, JSON):
// FCT slowdown per flow-size bucket, drops, PFC pauses, queue lengths, link utilisation,
// and how fast the simulator went.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/collective/results.h"
#include "sim/fluid/fluid_network.h"
#include "sim/network.h"

namespace xm::sim {

// Upper edges (bytes, inclusive) of the flow-size buckets; a last bucket takes the rest.
std::vector<uint64_t> default_buckets();

struct SlowdownRow {
  std::string label;       // "<=10K", "10K-100K", ..., "all"
  uint64_t lo = 0, hi = 0; // sizes in (lo, hi]; hi = UINT64_MAX for the last
  size_t flows = 0;
  double p50 = 0, p95 = 0, p99 = 0, mean = 0;
};

struct QueueRow {
  std::string link_class;  // egress ports of this class ("tor->host": ToR downlinks)
  uint64_t samples = 0;
  uint64_t p50 = 0, p95 = 0, p99 = 0, max = 0;  // bytes seen by arriving data packets
};

struct LinkRow {
  std::string link_class;
  size_t ports = 0;
  double mean_util = 0, max_util = 0;  // bytes sent / capacity over the traffic window
  double paused_us = 0;                // summed over the class's ports
};

struct Report {
  std::string scenario, cc;
  uint64_t seed = 0;
  size_t flows = 0, finished = 0;
  std::vector<SlowdownRow> slowdown;  // per bucket, then "all"
  Counters counters;
  double paused_us = 0;
  std::vector<QueueRow> queues;       // per link class, then "all switches"
  std::vector<LinkRow> links;
  double last_finish_us = 0;          // when the last flow finished (e.g. an all-reduce)
  double sim_seconds = 0, wall_seconds = 0;
  uint64_t events = 0;
  double events_per_second = 0;
  uint64_t peak_rss_kb = 0;
  std::vector<CollectiveResult> collectives;  // replayed collectives, if any
};

// Summarises a finished (or stopped) network. Slowdown = FCT / ideal FCT, at least 1,
// over finished flows.
Report make_report(const Network& network, const std::vector<uint64_t>& buckets);
// The same for the flow-level engine: slowdown is the last byte's arrival after the
// start over the same alone on the network; nothing queues, drops or pauses.
Report make_report(const FluidNetwork& network, const std::vector<uint64_t>& buckets);

// Peak resident memory of this process so far, in KiB.
uint64_t peak_rss_kb();

std::string slowdown_csv(const std::vector<Report>& reports);  // cc,bucket,lo,hi,flows,p50,p95,p99,mean
std::string summary_csv(const std::vector<Report>& reports);   // one row per algorithm
std::string reports_json(const std::vector<Report>& reports);
// A table for the terminal: slowdown p50/p99 per bucket and algorithm, then the totals.
std::string reports_text(const std::vector<Report>& reports);

// "10K", "1.5M": flow sizes as the tables print them.
std::string size_label(uint64_t bytes);

}  // namespace xm::sim
