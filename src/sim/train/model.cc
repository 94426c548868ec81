#include "sim/train/model.h"

#include <algorithm>
#include <cstdio>

namespace xm::sim::train {

double layer_forward_flops_per_token(const ModelSpec& m) {
  const double h = m.hidden, kv = double(m.hidden) * m.kv_heads / m.heads, f = m.ffn, s = m.seq;
  const double mlp_matrices = m.swiglu ? 3 : 2;
  return 2 * h * (h + 2 * kv)      // Q, K, V
         + 2 * h * h               // output projection
         + 2 * mlp_matrices * h * f  // MLP
         + 2 * 2 * s * h;          // scores and their weighted sum, over the whole sequence
}

double logits_forward_flops_per_token(const ModelSpec& m) { return 2.0 * m.hidden * m.vocab; }

namespace {
double tokens(const TrainJob& job) { return double(job.parallel.global_batch) * job.model.seq; }
}  // namespace

double model_flops(const TrainJob& job) {
  const ModelSpec& m = job.model;
  return 3 * tokens(job) * (m.layers * layer_forward_flops_per_token(m) + logits_forward_flops_per_token(m));
}

double executed_flops(const TrainJob& job) {
  const ModelSpec& m = job.model;
  const double recompute = job.parallel.recompute == Recompute::kFull ? m.layers * layer_forward_flops_per_token(m) : 0;
  return model_flops(job) + tokens(job) * recompute;
}

uint64_t layer_parameters(const ModelSpec& m) {
  const uint64_t h = m.hidden, kv = uint64_t(m.hidden) * m.kv_heads / m.heads, f = m.ffn;
  return h * (h + 2 * kv) + h * h + (m.swiglu ? 3 : 2) * h * f + 2 * h;  // + the two norms
}

uint64_t parameters(const ModelSpec& m) {
  return uint64_t(m.layers) * layer_parameters(m) + 2ull * m.vocab * m.hidden;
}

StageLayers stage_layers(const TrainJob& job) {
  const ParallelSpec& p = job.parallel;
  const uint32_t per = (job.model.layers + 2 * p.fewer_on_ends) / p.pp;
  if (p.pp == 1) return {per, per, per};
  return {per - p.fewer_on_ends, per, per - p.fewer_on_ends};
}

uint64_t micro_batches(const TrainJob& job) {
  const ParallelSpec& p = job.parallel;
  return p.global_batch / (uint64_t(p.dp) * p.micro_batch);
}

uint64_t parameters_per_gpu(const TrainJob& job) {
  const ModelSpec& m = job.model;
  const StageLayers s = stage_layers(job);
  const uint64_t embedding = uint64_t(m.vocab) * m.hidden, layer = layer_parameters(m);
  uint64_t fullest = std::max(s.middle * layer, s.first * layer + embedding);
  if (job.parallel.pp == 1) fullest = s.middle * layer + 2 * embedding;
  return fullest / job.parallel.tp;
}

Memory memory_per_gpu(const TrainJob& job) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const double params = double(parameters_per_gpu(job));
  Memory mem;
  mem.weights = 2 * params;  // bf16
  mem.gradients = double(p.grad_bytes) * params;
  mem.optimizer = 12 * params / (p.zero1 ? p.dp : 1);  // fp32 master weights and Adam's two moments
  // Activations, sequence-parallel over tp, flash attention (no s × s scores kept): a
  // layer keeps about 34·s·b·h bytes (Korthikanti et al., 2022); under full recompute only
  // its 2·s·b·h input, plus one layer's working set. The first stage holds up to pp
  // micro-batches in flight (1F1B).
  const StageLayers s = stage_layers(job);
  const double sbh = double(m.seq) * p.micro_batch * m.hidden / p.tp;
  const double in_flight = double(std::min<uint64_t>(p.pp, micro_batches(job)));
  const double kept = m.dropout ? 34 * sbh : 32 * sbh;  // without the two dropout masks
  const double per_layer = p.recompute == Recompute::kFull ? 2 * sbh : kept;
  mem.activations = in_flight * std::max(s.first, s.middle) * per_layer + (p.recompute == Recompute::kFull ? kept : 0);
  return mem;
}

Status check_memory(const TrainJob& job) {
  const Memory mem = memory_per_gpu(job);
  const double gib = double(1ull << 30), have = job.gpu.memory_gib * gib;
  if (mem.total() <= have) return Status::Ok();
  char text[400];
  std::snprintf(text, sizeof text,
                "%s: the model does not fit: the fullest stage needs %.1f GiB per accelerator (weights %.1f, gradients "
                "%.1f, optimizer %.1f, activations %.1f), gpu.memory_gib is %.0f (try more tp or pp, zero1, or "
                "recompute: full)",
                job.source.c_str(), mem.total() / gib, mem.weights / gib, mem.gradients / gib, mem.optimizer / gib,
                mem.activations / gib, job.gpu.memory_gib);
  return Error{text};
}

}  // namespace xm::sim::train
