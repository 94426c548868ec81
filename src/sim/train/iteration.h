// One training iteration's time, from the job's compute and its simulated communication.
//
// The fullest pipeline stage sets the pace. Per micro-batch it runs forward and backward
// (2 × forward, + 1 forward under full recompute) at the accelerator's peak × efficiency,
// its tensor-parallel all-reduces in line (4 per layer, 6 with recompute; Megatron does not
// overlap them), and per chunk a send of activations forward and of gradients back (with
// overlap_p2p only what outlasts a chunk's compute).
// 1F1B runs m micro-batches plus a fill and drain of (pp − 1)/v of them (v: the interleaved
// schedule's virtual stages). The data-parallel reduction of the gradients follows, in
// buckets; with overlap_grad_reduce it hides behind the last backward pass, all but its
// last bucket.
#pragma once

#include <functional>
#include <string>

#include "sim/train/comm.h"
#include "sim/train/job.h"
#include "sim/train/model.h"
#include "util/result.h"

namespace xm::sim::train {

struct Iteration {
  uint64_t gpus = 0, micro_batches = 0;
  // Per micro-batch on the fullest stage, seconds.
  double forward = 0, backward = 0, tp_per_micro_batch = 0, pp_per_micro_batch = 0;
  // The iteration and where it goes, seconds: the parts add up to it.
  double iteration = 0, compute = 0, tp_exposed = 0, pp_exposed = 0, bubble = 0, dp_exposed = 0;
  double dp_total = 0;  // all buckets, hidden or not
  double model_tflops_per_gpu = 0, mfu = 0, gpu_utilization = 0, tokens_per_second = 0;
  Memory memory;
  Communication comm;
};

// The arithmetic alone, for a given communication (pure). Needs the job's dp filled in
// (check_split).
Iteration combine(const TrainJob& job, const Communication& comm);
// The accelerator efficiency at which `combine` gives an iteration of `seconds` (a
// measured run's), for the same communication; an error when no efficiency in (0, 1] does.
Result<double> fit_efficiency(TrainJob job, const Communication& comm, double seconds);

// Loads the cluster, checks the split (filling in dp) and the memory, simulates the
// communication.
Result<Iteration> simulate_iteration(TrainJob& job, const std::function<void(const std::string&)>& log = {});

std::string iteration_json(const TrainJob& job, const Iteration& it);
std::string iteration_text(const TrainJob& job, const Iteration& it);
// phase,seconds,share — the breakdown
std::string breakdown_csv(const Iteration& it);
// One iteration per pipeline stage: forward, backward, the bubble, the gradients' reduction.
std::string timeline_svg(const TrainJob& job, const Iteration& it);

}  // namespace xm::sim::train
