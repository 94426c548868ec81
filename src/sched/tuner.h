// The tuner: which algorithm a collective runs, from a cost model whose constants were
// measured on this job's own links at start-up (calibrate.h), in the spirit of NCCL's
// time = latency × steps + bytes / bandwidth.
//
// Three link classes: shared memory inside a host; a rail between hosts (local rank l
// to local rank l of another host, NIC l to NIC l); and a cross-rail path (NIC l to
// NIC m, through the spine), measured with every rank sending across at once, so an
// oversubscribed spine shows up as a low bandwidth.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "sched/rank_layout.h"
#include "sched/schedule.h"
#include "util/result.h"

namespace xm::sched {

struct LinkCost {
  double latency_us = 0;    // one step: a message's fixed cost
  double bytes_per_us = 0;  // per rank, with every rank of the pattern busy; 0: not measured
  bool known() const { return bytes_per_us > 0; }
};

struct CostModel {
  LinkCost shm, rail, cross;
};

struct Estimate {
  Algorithm algorithm;
  double us;
};

// Every algorithm that applies to `a` on `layout`, with its predicted time, cheapest
// first. `relays_ok`: the relay ring may run (shared memory only, plain buffers).
std::vector<Estimate> estimate(const CollectiveArgs& a, const RankLayout& layout, const CostModel& model,
                               bool relays_ok);

// XCCL_ALGO: "name" or "collective:name", comma-separated, e.g.
// "all_reduce:hierarchical,alltoall:pxn" or "ring". Unknown names are errors.
struct AlgorithmOverrides {
  std::vector<std::pair<Collective, Algorithm>> forced;
  // The forced algorithm for `c`, or kDefault.
  Algorithm for_collective(Collective c) const;
};
Result<AlgorithmOverrides> parse_algorithm_overrides(const std::string& text);

std::string describe(const CostModel& model);

// What, besides the call itself, decides how a collective runs: the same on every rank
// of a job (settings and measurements, never buffers), so every rank decides alike. The
// runtime fills it from XCCL_* settings and calibration; the simulator from the spec.
struct Tuning {
  CostModel model;
  AlgorithmOverrides forced;      // XCCL_ALGO
  uint64_t chunk_bytes = 0;       // XCCL_CHUNK_BYTES; 0: the tuner's grain
  uint64_t fifo_bytes = 4 << 20;  // a shared-memory link's FIFO (bounds the relay grain)
  bool links_in_memory = false;   // every peer over shared memory: relay schedules apply
  bool oversubscribed = false;    // more ranks on a host than cores
};

// `a` with its algorithm, pipelining grain, relays and shared_memory decided, and
// `layout` as its layout (it must outlive the result's use): a pure function, so the
// runtime and the simulator run the same schedule for the same call.
CollectiveArgs tuned(CollectiveArgs a, const RankLayout& layout, const Tuning& tuning);

}  // namespace xm::sched
