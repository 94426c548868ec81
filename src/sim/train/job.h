// A training job, as people write it in YAML (examples/train/*.yaml, docs/training.md):
// the model, how it is split (tensor, pipeline and data parallelism, Megatron-style), the
// accelerator, and the cluster it runs on.
//
//   name: gpt3-175b
//   cluster: ../rail-1024-a100.yaml          # a cluster spec (xm topo gen)
//   model: {layers: 96, hidden: 12288, heads: 96, seq: 2048, vocab: 51200}
//   parallel: {tp: 8, pp: 8, micro_batch: 1, global_batch: 1536, virtual_stages: 3,
//              recompute: full}
//   gpu: {type: a100}                         # or {peak_tflops: 312, memory_gib: 80}
//
// Errors name the file, line, column and field; an inconsistent split (tp × pp × dp not
// the cluster's accelerators, layers that do not divide into stages, a model that does
// not fit the accelerator's memory) names the numbers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "util/result.h"

namespace xm::sim::train {

struct ModelSpec {
  std::string name;
  uint32_t layers = 0, hidden = 0, heads = 0;
  uint32_t kv_heads = 0;  // grouped-query attention; 0: as many as heads
  uint32_t ffn = 0;       // the MLP's inner width; 0: 4 × hidden
  bool swiglu = false;    // three MLP matrices instead of two (Llama)
  uint32_t seq = 2048, vocab = 51200;
  bool dropout = true;    // keeps its masks for backward (GPT-3, MT-NLG); Llama has none
};

enum class Recompute { kNone, kFull };

struct ParallelSpec {
  uint32_t tp = 1, pp = 1, dp = 0;  // dp 0: the accelerators left over
  uint32_t micro_batch = 1, global_batch = 0;  // sequences
  uint32_t virtual_stages = 1;  // > 1: the interleaved 1F1B schedule, that many chunks per stage
  uint32_t fewer_on_ends = 0;   // layers taken off the first and the last stage each (they hold
                                // the embedding and the logits; Llama 3 takes one)
  Recompute recompute = Recompute::kNone;
  bool zero1 = false;                // sharded optimizer: reduce-scatter + all-gather
  bool overlap_grad_reduce = false;  // buckets reduce during the last backward pass
  bool overlap_p2p = false;          // pipeline sends run behind the next chunk's compute
  uint64_t bucket_bytes = 128ull << 20;
  uint32_t grad_bytes = 2;  // per gradient element on the wire (bf16; 4: fp32)
};

struct GpuSpec {
  std::string type = "h100";
  double peak_tflops = 989;  // dense bf16
  double memory_gib = 80;
  double efficiency = 0.5;   // achieved over peak in the matrix work, fitted per type (docs/training.md)
};

struct TrainJob {
  std::string name, source;
  std::string cluster_path;  // cluster spec (resolved)
  ModelSpec model;
  ParallelSpec parallel;
  GpuSpec gpu;
  // Communication larger than twice this is simulated at this size and twice it, and
  // extrapolated in bytes (`simulation: {max_bytes: 4M}`).
  uint64_t simulated_bytes = 4ull << 20;
};

Result<TrainJob> parse_job(std::string_view text, const std::string& source);
Result<TrainJob> load_job(const std::string& path);

// The checks that need the cluster: the split against its accelerators. Fills in dp.
Status check_split(TrainJob& job, uint32_t servers, uint32_t per_server);

}  // namespace xm::sim::train
