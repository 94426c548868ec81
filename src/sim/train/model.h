// What a training job computes and keeps, from its model and split alone: FLOPs,
// parameters, memory. Pure arithmetic, no fabric.
//
// FLOPs count two per multiply-add, in the matrix products only (as Megatron-LM, SC'21,
// counts them): per layer and token, QKV and the output projection, the MLP, and the
// attention's two s × h products; the logits once per token. Backward is twice forward;
// full recompute adds one forward of every layer (not of the logits).
#pragma once

#include <cstdint>
#include <string>

#include "sim/train/job.h"
#include "util/result.h"

namespace xm::sim::train {

double layer_forward_flops_per_token(const ModelSpec& m);
double logits_forward_flops_per_token(const ModelSpec& m);
// Model FLOPs of one iteration (3 × forward, no recompute): what MFU divides.
double model_flops(const TrainJob& job);
// What the accelerators execute in one iteration (recompute included).
double executed_flops(const TrainJob& job);

uint64_t layer_parameters(const ModelSpec& m);
uint64_t parameters(const ModelSpec& m);  // embedding and logits counted once each

// One pipeline stage's share of the layers; the first and last hold fewer.
struct StageLayers {
  uint32_t first = 0, middle = 0, last = 0;
};
StageLayers stage_layers(const TrainJob& job);

// Per accelerator of the stage that holds the most.
struct Memory {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;  // bytes
  double total() const { return weights + gradients + optimizer + activations; }
};
uint64_t parameters_per_gpu(const TrainJob& job);  // the fullest stage's, over tp
Memory memory_per_gpu(const TrainJob& job);
// An error naming the numbers when the fullest stage does not fit the accelerator.
Status check_memory(const TrainJob& job);

uint64_t micro_batches(const TrainJob& job);  // per pipeline per iteration

}  // namespace xm::sim::train
