// A training job's communication, simulated: each kind's collectives are the schedules
// xccl would run (sim/collective), all groups of a kind at once on the job's fabric in
// the flow-level engine, as the job runs them at once (every data-parallel group reduces
// its bucket together; every pipeline boundary passes activations together).
//
// Ranks follow Megatron-LM's order, tensor-parallel fastest, then data, then pipeline:
// global rank g = t + tp·(d + dp·p), on server g / per_server, accelerator g % per_server.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/collective/collective.h"
#include "sim/topology.h"
#include "sim/train/job.h"
#include "util/result.h"

namespace xm::sim::train {

struct Slot {
  uint32_t server = 0, local = 0;
};
Slot slot_of(const ParallelSpec& p, uint32_t per_server, uint32_t t, uint32_t d, uint32_t s);

// The ranks of one group, in group order, as a collective's `ranks` (servers at a stride,
// consecutive accelerators on each); an error when they are not that regular.
Result<CollectiveOptions> as_ranks(const std::vector<Slot>& group);

// One kind of communication: what one group moves, and how long the slowest group took
// with all groups running at once.
struct CommKind {
  std::string kind, op, algorithm;  // "tp" all_reduce, "pp" broadcast (a send), "dp" all_reduce, ...
  uint64_t bytes = 0;               // per rank, nccl-tests' size
  uint64_t simulated_bytes = 0;     // 0: simulated at `bytes`; else at this and twice this, and extrapolated
  uint32_t groups = 0, ranks = 0;   // how many ran at once, of how many ranks each
  double time_us = 0, busbw_gbs = 0;
  size_t flows = 0;
  double wall_seconds = 0;
};

struct Communication {
  CommKind tp, pp, dp, dp_gather;  // dp_gather: zero1's all-gather of the parameters
  bool has_pp = false, has_dp = false, has_tp = false, zero1 = false;
};

// `topology`: the job's cluster with its servers' intra switches (topology_from_fabric),
// built once for every kind.
Result<Communication> simulate_communication(const TrainJob& job, const SimTopology& topology,
                                             const std::function<void(const std::string&)>& log = {});

}  // namespace xm::sim::train
