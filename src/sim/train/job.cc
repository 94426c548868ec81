#include "sim/train/job.h"

#include <filesystem>

#include "sim/yaml_reader.h"
#include "util/file.h"

namespace xm::sim::train {
namespace {

// Dense bf16 peaks from the vendors' data sheets; the efficiencies are fitted, one run
// per type (docs/training.md: A100 on MT-NLG at 2,240 GPUs, H100 on Llama 3 at 8,192).
struct GpuType {
  const char* name;
  double peak_tflops, memory_gib, efficiency;
};
constexpr GpuType kGpuTypes[] = {
    {"a100", 312, 80, 0.517},
    {"a100-40g", 312, 40, 0.517},
    {"h100", 989, 80, 0.568},
    {"h800", 989, 80, 0.568},
};

ModelSpec read_model(const Reader& r, const YAML::Node& n) {
  r.keys(n, "model", {"name", "layers", "hidden", "heads", "kv_heads", "ffn", "swiglu", "seq", "vocab", "dropout"});
  auto f = [](const char* k) { return std::string("model.") + k; };
  ModelSpec m;
  for (const char* k : {"layers", "hidden", "heads"})
    if (!n[k]) r.fail(n, f(k), "required");
  if (n["name"]) m.name = r.text(n["name"], f("name"));
  m.layers = uint32_t(r.whole(n["layers"], f("layers"), 1, 100'000));
  m.hidden = uint32_t(r.whole(n["hidden"], f("hidden"), 1, 1 << 20));
  m.heads = uint32_t(r.whole(n["heads"], f("heads"), 1, 1 << 16));
  if (m.hidden % m.heads) r.fail(n["heads"], f("heads"), std::to_string(m.heads) + " heads do not divide hidden " + std::to_string(m.hidden));
  m.kv_heads = n["kv_heads"] ? uint32_t(r.whole(n["kv_heads"], f("kv_heads"), 1, m.heads)) : m.heads;
  if (m.heads % m.kv_heads) r.fail(n["kv_heads"], f("kv_heads"), std::to_string(m.kv_heads) + " do not divide the " + std::to_string(m.heads) + " heads");
  m.ffn = n["ffn"] ? uint32_t(r.whole(n["ffn"], f("ffn"), 1, 1 << 24)) : 4 * m.hidden;
  if (n["swiglu"]) m.swiglu = r.boolean(n["swiglu"], f("swiglu"));
  if (n["seq"]) m.seq = uint32_t(r.whole(n["seq"], f("seq"), 1, 1 << 24));
  if (n["dropout"]) m.dropout = r.boolean(n["dropout"], f("dropout"));
  if (n["vocab"]) m.vocab = uint32_t(r.whole(n["vocab"], f("vocab"), 1, 1 << 24));
  return m;
}

ParallelSpec read_parallel(const Reader& r, const YAML::Node& n) {
  r.keys(n, "parallel", {"tp", "pp", "dp", "micro_batch", "global_batch", "virtual_stages", "fewer_on_ends",
                         "recompute", "zero1", "overlap_grad_reduce", "overlap_p2p", "bucket_bytes", "grad_bytes"});
  auto f = [](const char* k) { return std::string("parallel.") + k; };
  ParallelSpec p;
  if (n["tp"]) p.tp = uint32_t(r.whole(n["tp"], f("tp"), 1, 1 << 16));
  if (n["pp"]) p.pp = uint32_t(r.whole(n["pp"], f("pp"), 1, 1 << 16));
  if (n["dp"]) p.dp = uint32_t(r.whole(n["dp"], f("dp"), 1, 1 << 24));
  if (n["micro_batch"]) p.micro_batch = uint32_t(r.whole(n["micro_batch"], f("micro_batch"), 1, 1 << 20));
  if (!n["global_batch"]) r.fail(n, f("global_batch"), "required (sequences per iteration)");
  p.global_batch = uint32_t(r.whole(n["global_batch"], f("global_batch"), 1, 1u << 30));
  if (n["virtual_stages"]) p.virtual_stages = uint32_t(r.whole(n["virtual_stages"], f("virtual_stages"), 1, 1 << 10));
  if (n["fewer_on_ends"]) p.fewer_on_ends = uint32_t(r.whole(n["fewer_on_ends"], f("fewer_on_ends"), 0, 1 << 10));
  if (n["recompute"]) {
    const std::string v = r.text(n["recompute"], f("recompute"));
    if (v == "none") p.recompute = Recompute::kNone;
    else if (v == "full") p.recompute = Recompute::kFull;
    else r.fail(n["recompute"], f("recompute"), "expected none or full, got \"" + v + "\"");
  }
  if (n["zero1"]) p.zero1 = r.boolean(n["zero1"], f("zero1"));
  if (n["overlap_grad_reduce"]) p.overlap_grad_reduce = r.boolean(n["overlap_grad_reduce"], f("overlap_grad_reduce"));
  if (n["overlap_p2p"]) p.overlap_p2p = r.boolean(n["overlap_p2p"], f("overlap_p2p"));
  if (n["bucket_bytes"]) p.bucket_bytes = r.size(n["bucket_bytes"], f("bucket_bytes"), 1 << 16, uint64_t(1) << 40);
  if (n["grad_bytes"]) {
    p.grad_bytes = uint32_t(r.whole(n["grad_bytes"], f("grad_bytes"), 1, 8));
    if (p.grad_bytes != 2 && p.grad_bytes != 4) r.fail(n["grad_bytes"], f("grad_bytes"), "expected 2 (bf16) or 4 (fp32)");
  }
  return p;
}

GpuSpec read_gpu(const Reader& r, const YAML::Node& n) {
  r.keys(n, "gpu", {"type", "peak_tflops", "memory_gib", "efficiency"});
  GpuSpec g;
  if (n["type"]) {
    g.type = r.text(n["type"], "gpu.type");
    const GpuType* known = nullptr;
    std::string names;
    for (const GpuType& t : kGpuTypes) {
      if (g.type == t.name) known = &t;
      names += std::string(names.empty() ? "" : ", ") + t.name;
    }
    if (!known) r.fail(n["type"], "gpu.type", "expected " + names + " (or give peak_tflops), got \"" + g.type + "\"");
    g.peak_tflops = known->peak_tflops, g.memory_gib = known->memory_gib, g.efficiency = known->efficiency;
  } else if (n["peak_tflops"]) {
    g.type = "custom";
  } else {
    r.fail(n, "gpu", "give type (" + std::string(kGpuTypes[0].name) + ", ...) or peak_tflops");
  }
  if (n["peak_tflops"]) g.peak_tflops = r.number(n["peak_tflops"], "gpu.peak_tflops", 0.001, 1e6);
  if (n["memory_gib"]) g.memory_gib = r.number(n["memory_gib"], "gpu.memory_gib", 0.001, 1e6);
  if (n["efficiency"]) g.efficiency = r.number(n["efficiency"], "gpu.efficiency", 0.001, 1);
  return g;
}

}  // namespace

Result<TrainJob> parse_job(std::string_view text, const std::string& source) {
  TrainJob job;
  job.source = source;
  const std::string dir = std::filesystem::path(source).parent_path().string();
  Status read = read_yaml(text, source, [&](const Reader& r, const YAML::Node& root) {
    if (!root.IsMap()) r.fail(root, "", "a training job is a mapping (cluster, model, parallel, gpu)");
    r.keys(root, "", {"name", "cluster", "model", "parallel", "gpu", "simulation"});
    job.name = root["name"] ? r.text(root["name"], "name") : std::filesystem::path(source).stem().string();
    for (const char* k : {"cluster", "model", "parallel", "gpu"})
      if (!root[k]) r.fail(root, k, "required");
    job.cluster_path = resolve_path(dir, r.text(root["cluster"], "cluster"));
    job.model = read_model(r, root["model"]);
    job.parallel = read_parallel(r, root["parallel"]);
    job.gpu = read_gpu(r, root["gpu"]);
    if (const YAML::Node sim = root["simulation"]) {
      r.keys(sim, "simulation", {"max_bytes"});
      if (sim["max_bytes"]) job.simulated_bytes = r.size(sim["max_bytes"], "simulation.max_bytes", 4096, uint64_t(1) << 40);
    }
    const ModelSpec& m = job.model;
    const ParallelSpec& p = job.parallel;
    const YAML::Node par = root["parallel"];
    if (m.heads % p.tp)
      r.fail(par["tp"], "parallel.tp", "tp " + std::to_string(p.tp) + " does not divide the " + std::to_string(m.heads) + " heads");
    const uint64_t chunks = uint64_t(p.pp) * p.virtual_stages;
    const uint64_t balanced = m.layers + 2ull * p.fewer_on_ends;
    if (p.pp == 1 && p.fewer_on_ends) r.fail(par["fewer_on_ends"], "parallel.fewer_on_ends", "needs pp > 1");
    if (balanced % chunks)
      r.fail(par["pp"] ? par["pp"] : par, "parallel.pp",
             std::to_string(m.layers) + " layers" +
                 (p.fewer_on_ends ? " (+ 2 × " + std::to_string(p.fewer_on_ends) + " fewer on the ends)" : std::string()) +
                 " do not divide into " + std::to_string(p.pp) + " stages" +
                 (p.virtual_stages > 1 ? " × " + std::to_string(p.virtual_stages) + " virtual stages" : std::string()));
    if (p.fewer_on_ends >= balanced / p.pp)
      r.fail(par["fewer_on_ends"], "parallel.fewer_on_ends", "leaves the first and last stages no layers");
    if (p.virtual_stages > 1 && p.pp == 1) r.fail(par["virtual_stages"], "parallel.virtual_stages", "needs pp > 1");
  });
  if (!read) return Error{read.message()};
  return job;
}

Result<TrainJob> load_job(const std::string& path) {
  Result<std::string> text = read_file(path);
  if (!text) return text.error();
  return parse_job(*text, path);
}

Status check_split(TrainJob& job, uint32_t servers, uint32_t per_server) {
  ParallelSpec& p = job.parallel;
  const uint64_t gpus = uint64_t(servers) * per_server, model = uint64_t(p.tp) * p.pp;
  const std::string where = job.source + ": parallel: ";
  if (gpus % model)
    return Error{where + "tp " + std::to_string(p.tp) + " × pp " + std::to_string(p.pp) + " does not divide the cluster's " +
                 std::to_string(gpus) + " accelerators"};
  if (p.dp == 0) p.dp = uint32_t(gpus / model);
  if (model * p.dp != gpus)
    return Error{where + "tp " + std::to_string(p.tp) + " × pp " + std::to_string(p.pp) + " × dp " + std::to_string(p.dp) +
                 " = " + std::to_string(model * p.dp) + ", but the cluster has " + std::to_string(gpus) + " accelerators"};
  if (per_server % p.tp && p.tp % per_server)
    return Error{where + "tp " + std::to_string(p.tp) + " and the " + std::to_string(per_server) +
                 " accelerators of a server: one must divide the other"};
  const uint64_t per_step = uint64_t(p.dp) * p.micro_batch;
  if (p.global_batch % per_step)
    return Error{where + "global_batch " + std::to_string(p.global_batch) + " is not a multiple of dp " +
                 std::to_string(p.dp) + " × micro_batch " + std::to_string(p.micro_batch)};
  const uint64_t micro_batches = p.global_batch / per_step;
  if (p.virtual_stages > 1 && micro_batches % p.pp)
    return Error{where + "the interleaved schedule needs the " + std::to_string(micro_batches) +
                 " micro-batches per pipeline to be a multiple of pp " + std::to_string(p.pp)};
  return Status::Ok();
}

}  // namespace xm::sim::train
