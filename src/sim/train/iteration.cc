#include "sim/train/iteration.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "topo/fabric.h"
#include "topo/spec_io.h"
#include "util/format.h"

namespace xm::sim::train {
namespace {

// Where the iteration goes, in one order for every output: key, words, seconds.
struct Phase {
  const char *key, *words;
  double seconds;
};
std::vector<Phase> phases(const Iteration& it) {
  return {{"compute", "compute", it.compute},
          {"tp_exposed", "tensor-parallel comm", it.tp_exposed},
          {"pp_exposed", "pipeline sends", it.pp_exposed},
          {"bubble", "pipeline bubble", it.bubble},
          {"dp_exposed", "data-parallel comm", it.dp_exposed}};
}

}  // namespace

Iteration combine(const TrainJob& job, const Communication& comm) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  Iteration it;
  it.gpus = uint64_t(p.tp) * p.pp * p.dp;
  it.micro_batches = micro_batches(job);
  it.memory = memory_per_gpu(job);
  it.comm = comm;
  // The fullest stage: the middle's layers, or the last's fewer layers and the logits.
  const StageLayers s = stage_layers(job);
  const double tokens = double(p.micro_batch) * m.seq, layer = layer_forward_flops_per_token(m);
  const double first = s.first * layer, middle = p.pp > 2 ? s.middle * layer : 0,
               last = s.last * layer + logits_forward_flops_per_token(m);
  const uint32_t layers = std::max(s.first, s.middle);
  const double rate = job.gpu.peak_tflops * 1e12 * job.gpu.efficiency;
  const double forward_flops = tokens * std::max({first, middle, last}) / p.tp;
  const double recompute = p.recompute == Recompute::kFull ? tokens * layers * layer / p.tp : 0;
  it.forward = forward_flops / rate;
  it.backward = (2 * forward_flops + recompute) / rate;
  const double us = 1e-6;
  if (comm.has_tp) it.tp_per_micro_batch = layers * (p.recompute == Recompute::kFull ? 6 : 4) * comm.tp.time_us * us;
  if (comm.has_pp) {
    // A send per chunk each way; overlapped, only what outlasts a chunk's compute shows.
    const double sends = 2.0 * p.virtual_stages, chunk = (it.forward + it.backward) / sends;
    it.pp_per_micro_batch = sends * (p.overlap_p2p ? std::max(comm.pp.time_us * us - chunk, 0.0) : comm.pp.time_us * us);
  }
  const double slot = it.forward + it.backward + it.tp_per_micro_batch + it.pp_per_micro_batch;
  const double mb = double(it.micro_batches);
  it.compute = mb * (it.forward + it.backward);
  it.tp_exposed = mb * it.tp_per_micro_batch;
  it.pp_exposed = mb * it.pp_per_micro_batch;
  it.bubble = double(p.pp - 1) / p.virtual_stages * slot;
  if (comm.has_dp) {
    const double grads = double(parameters_per_gpu(job)) * p.grad_bytes;
    const double buckets = grads / double(comm.dp.bytes);
    double reduce = buckets * comm.dp.time_us * us, gather = comm.zero1 ? buckets * comm.dp_gather.time_us * us : 0;
    it.dp_total = reduce + gather;
    if (p.overlap_grad_reduce) {
      // Behind the last backward pass, all but the last bucket; the gather behind the
      // next iteration's first forward.
      reduce = std::max(reduce - it.backward, std::min(reduce, comm.dp.time_us * us));
      gather = std::max(gather - it.forward, 0.0);
    }
    it.dp_exposed = reduce + gather;
  }
  it.iteration = it.compute + it.tp_exposed + it.pp_exposed + it.bubble + it.dp_exposed;
  it.model_tflops_per_gpu = model_flops(job) / (it.iteration * double(it.gpus)) / 1e12;
  it.mfu = it.model_tflops_per_gpu / job.gpu.peak_tflops;
  it.gpu_utilization = it.compute / it.iteration;
  it.tokens_per_second = double(p.global_batch) * m.seq / it.iteration;
  return it;
}

Result<double> fit_efficiency(TrainJob job, const Communication& comm, double seconds) {
  // The iteration falls as the efficiency rises: bisect.
  double lo = 1e-4, hi = 1;
  job.gpu.efficiency = hi;
  if (const double fastest = combine(job, comm).iteration; fastest > seconds)
    return Error{job.source + ": even at efficiency 1 the iteration takes " + std::to_string(fastest) + " s, more than " +
                 std::to_string(seconds) + " s: the communication alone is too slow"};
  for (int i = 0; i < 100; ++i) {
    job.gpu.efficiency = (lo + hi) / 2;
    (combine(job, comm).iteration > seconds ? lo : hi) = job.gpu.efficiency;
  }
  return (lo + hi) / 2;
}

Result<Iteration> simulate_iteration(TrainJob& job, const std::function<void(const std::string&)>& log) {
  Result<topo::ClusterSpec> spec = topo::load_spec(job.cluster_path);
  if (!spec) return Error{job.source + ": cluster: " + spec.error().message};
  if (Status s = check_split(job, spec->servers, spec->server.accelerators); !s) return Error{s.message()};
  if (Status s = check_memory(job); !s) return Error{s.message()};
  Result<topo::Fabric> fabric = topo::build_fabric(*spec);
  if (!fabric) return Error{job.cluster_path + ": " + fabric.error().message};
  Result<SimTopology> topology = topology_from_fabric(*fabric, true);
  if (!topology) return Error{job.cluster_path + ": " + topology.error().message};
  Result<Communication> comm = simulate_communication(job, *topology, log);
  if (!comm) return comm.error();
  return combine(job, *comm);
}

std::string iteration_json(const TrainJob& job, const Iteration& it) {
  nlohmann::ordered_json j;
  j["job"] = job.name;
  j["gpus"] = it.gpus;
  j["gpu"] = {{"type", job.gpu.type}, {"peak_tflops", job.gpu.peak_tflops}, {"efficiency", job.gpu.efficiency}};
  j["parallel"] = {{"tp", job.parallel.tp}, {"pp", job.parallel.pp}, {"dp", job.parallel.dp},
                   {"virtual_stages", job.parallel.virtual_stages}, {"micro_batches", it.micro_batches}};
  j["iteration_s"] = it.iteration;
  for (const Phase& ph : phases(it)) j["breakdown_s"][ph.key] = ph.seconds;
  j["dp_total_s"] = it.dp_total;
  j["model_tflops_per_gpu"] = it.model_tflops_per_gpu;
  j["mfu"] = it.mfu;
  j["gpu_utilization"] = it.gpu_utilization;
  j["tokens_per_second"] = it.tokens_per_second;
  j["memory_gib"] = {{"weights", it.memory.weights / (1ull << 30)}, {"gradients", it.memory.gradients / (1ull << 30)},
                     {"optimizer", it.memory.optimizer / (1ull << 30)}, {"activations", it.memory.activations / (1ull << 30)}};
  nlohmann::ordered_json comm = nlohmann::ordered_json::array();
  for (const auto& [on, k] : {std::pair{it.comm.has_tp, &it.comm.tp}, {it.comm.has_pp, &it.comm.pp},
                              {it.comm.has_dp, &it.comm.dp}, {it.comm.has_dp && it.comm.zero1, &it.comm.dp_gather}}) {
    if (!on) continue;
    comm.push_back({{"kind", k->kind}, {"op", k->op}, {"algorithm", k->algorithm}, {"bytes", k->bytes},
                    {"groups", k->groups}, {"ranks", k->ranks}, {"time_us", k->time_us}, {"busbw_gbs", k->busbw_gbs},
                    {"flows", k->flows}, {"wall_seconds", k->wall_seconds},
                    {"simulated_bytes", k->simulated_bytes ? k->simulated_bytes : k->bytes}});
  }
  j["communication"] = comm;
  return j.dump(2) + "\n";
}

std::string breakdown_csv(const Iteration& it) {
  std::vector<Phase> rows = phases(it);
  rows.push_back({"iteration", "", it.iteration});
  std::string out = "phase,seconds,share\n";
  for (const Phase& ph : rows)
    out += std::string(ph.key) + "," + formatted("%.6f", ph.seconds) + "," + formatted("%.4f", ph.seconds / it.iteration) + "\n";
  return out;
}

std::string iteration_text(const TrainJob& job, const Iteration& it) {
  const ParallelSpec& p = job.parallel;
  std::string out;
  char line[300];
  std::snprintf(line, sizeof line, "%s: %llu GPUs (tp %u, pp %u, dp %u%s), %llu micro-batches of %u × %u tokens\n",
                job.name.c_str(), static_cast<unsigned long long>(it.gpus), p.tp, p.pp, p.dp,
                p.virtual_stages > 1 ? (", interleaved × " + std::to_string(p.virtual_stages)).c_str() : "",
                static_cast<unsigned long long>(it.micro_batches), p.micro_batch, job.model.seq);
  out += line;
  std::snprintf(line, sizeof line, "iteration %.3f s   %.1f model TFLOP/s per GPU   MFU %.1f %%   GPU busy %.1f %%   %.0f tokens/s\n",
                it.iteration, it.model_tflops_per_gpu, 100 * it.mfu, 100 * it.gpu_utilization, it.tokens_per_second);
  out += line;
  for (const Phase& ph : phases(it)) {
    std::snprintf(line, sizeof line, "  %-22s %9.3f s  %5.1f %%\n", ph.words, ph.seconds, 100 * ph.seconds / it.iteration);
    out += line;
  }
  if (it.dp_total > 0) {
    std::snprintf(line, sizeof line, "  (data-parallel comm in all %.3f s, %.3f s of it hidden)\n", it.dp_total,
                  it.dp_total - it.dp_exposed);
    out += line;
  }
  const Memory& m = it.memory;
  const double g = double(1ull << 30);
  std::snprintf(line, sizeof line, "memory per GPU %.1f GiB of %.0f (weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f)\n",
                m.total() / g, job.gpu.memory_gib, m.weights / g, m.gradients / g, m.optimizer / g, m.activations / g);
  out += line;
  return out;
}

std::string timeline_svg(const TrainJob& job, const Iteration& it) {
  // 1F1B drawn per stage (the interleaved schedule's chunks drawn as whole micro-batches):
  // stage s warms up with pp − s − 1 forwards, then alternates, then drains; a forward
  // waits for the previous stage's, a backward for the next stage's, each a send later.
  const uint32_t P = job.parallel.pp;
  const uint64_t M = it.micro_batches;
  const double f = it.forward + it.tp_per_micro_batch * it.forward / (it.forward + it.backward);
  const double b = it.backward + it.tp_per_micro_batch * it.backward / (it.forward + it.backward);
  const double send = P > 1 ? it.pp_per_micro_batch / (2.0 * job.parallel.virtual_stages) : 0;
  // When each forward and backward ends; negative: not run yet.
  std::vector<std::vector<double>> fend(P, std::vector<double>(M, -1)), bend(P, std::vector<double>(M, -1));
  struct Box {
    uint32_t stage;
    double start, end;
    bool forward;
  };
  std::vector<Box> boxes;
  // Each stage's order of operations; resolved stage by stage in dependency order by
  // repeated sweeps (small: pp × m operations).
  std::vector<std::vector<std::pair<bool, uint64_t>>> order(P);
  for (uint32_t s = 0; s < P; ++s) {
    const uint64_t warm = std::min<uint64_t>(P - s - 1, M);
    uint64_t nf = 0, nb = 0;
    for (; nf < warm; ++nf) order[s].push_back({true, nf});
    while (nb < M) {
      if (nf < M) order[s].push_back({true, nf++});
      order[s].push_back({false, nb++});
    }
  }
  std::vector<size_t> next(P, 0);
  std::vector<double> free_at(P, 0);
  for (bool progress = true; progress;) {
    progress = false;
    for (uint32_t s = 0; s < P; ++s)
      while (next[s] < order[s].size()) {
        const auto [fwd, i] = order[s][next[s]];
        // What it waits for, a send away: the previous stage's forward, or the next stage's
        // backward (its own forward comes earlier in its order).
        const bool neighbour = fwd ? s > 0 : s + 1 < P;
        const double waited = !neighbour ? 0 : fwd ? fend[s - 1][i] : bend[s + 1][i];
        if (waited < 0) break;
        const double ready = std::max(free_at[s], neighbour ? waited + send : 0);
        const double end = ready + (fwd ? f : b);
        (fwd ? fend : bend)[s][i] = end;
        boxes.push_back({s, ready, end, fwd});
        free_at[s] = end, ++next[s], progress = true;
      }
  }
  double pipeline_end = 0;
  for (double t : free_at) pipeline_end = std::max(pipeline_end, t);
  const double total = pipeline_end + it.dp_exposed;
  const double W = 1000, x0 = 90, x1 = W - 20, row = std::clamp(400.0 / P, 6.0, 28.0), y0 = 50;
  const double H = y0 + row * P + 50;
  auto X = [&](double t) { return x0 + (x1 - x0) * t / total; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + formatted("%g", W) + "\" height=\"" + formatted("%g", H) +
                    "\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + formatted("%g", W / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" + job.name +
         ": one iteration per pipeline stage (1F1B; forward blue, backward green, gradient reduction red)</text>\n";
  for (uint32_t s = 0; s < P; ++s)
    svg += "<text x=\"" + formatted("%g", x0 - 6) + "\" y=\"" + formatted("%g", y0 + row * (s + 0.7)) + "\" text-anchor=\"end\">stage " +
           std::to_string(s) + "</text>\n";
  for (const Box& bx : boxes)
    svg += "<rect x=\"" + formatted("%.2f", X(bx.start)) + "\" y=\"" + formatted("%.2f", y0 + row * bx.stage + 1) + "\" width=\"" +
           formatted("%.2f", std::max(X(bx.end) - X(bx.start), 0.3)) + "\" height=\"" + formatted("%.2f", row - 2) + "\" fill=\"" +
           (bx.forward ? "#4c78a8" : "#54a24b") + "\"/>\n";
  if (it.dp_exposed > 0)
    for (uint32_t s = 0; s < P; ++s)
      svg += "<rect x=\"" + formatted("%.2f", X(free_at[s])) + "\" y=\"" + formatted("%.2f", y0 + row * s + 1) + "\" width=\"" +
             formatted("%.2f", X(free_at[s] + it.dp_exposed) - X(free_at[s])) + "\" height=\"" + formatted("%.2f", row - 2) +
             "\" fill=\"#e45756\"/>\n";
  const double ya = y0 + row * P + 18;
  for (int k = 0; k <= 5; ++k)
    svg += "<text x=\"" + formatted("%.1f", X(total * k / 5)) + "\" y=\"" + formatted("%g", ya) + "\" text-anchor=\"middle\">" +
           formatted("%.3g s", total * k / 5) + "</text>\n";
  svg += "</svg>\n";
  return svg;
}

}  // namespace xm::sim::train
