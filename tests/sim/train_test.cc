// The training model: its FLOP count against Megatron-LM's closed form, the errors of an
// inconsistent job, the 1F1B arithmetic, and communication that comes from the fabric.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "sim/train/comm.h"
#include "sim/train/iteration.h"
#include "sim/train/job.h"
#include "sim/train/model.h"
#include "topo/generate.h"
#include "topo/spec_io.h"
#include "sim_fixtures.h"

namespace xm::sim::train {
namespace {

namespace fs = std::filesystem;

using test::temp_dir;

TrainJob parsed(const std::string& text) {
  Result<TrainJob> job = parse_job(text, "/tmp/job.yaml");
  EXPECT_TRUE(job) << job.error().message;
  return job ? *job : TrainJob{};
}

const char* kMtNlg =
    "cluster: c.yaml\n"
    "model: {layers: 105, hidden: 20480, heads: 128, seq: 2048, vocab: 51200}\n"
    "parallel: {tp: 8, pp: 35, global_batch: 1920, recompute: full, zero1: true}\n"
    "gpu: {type: a100}\n";

TEST(Train, FlopsAreMegatronsClosedForm) {
  // 96·B·s·l·h²·(1 + s/6h + V/16lh): forward, backward and full recompute of GPT layers.
  TrainJob job = parsed(kMtNlg);
  const double B = 1920, s = 2048, l = 105, h = 20480, V = 51200;
  const double megatron = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  EXPECT_NEAR(executed_flops(job) / megatron, 1.0, 1e-12);
  job.parallel.recompute = Recompute::kNone;
  EXPECT_NEAR(executed_flops(job) / model_flops(job), 1.0, 1e-12);
  EXPECT_LT(model_flops(job), megatron * 0.76);  // recompute is a quarter of the layers' work
  // GPT-3's 175 B parameters, Llama 3's 405 B (GQA, SwiGLU, untied embeddings).
  ModelSpec gpt3{"", 96, 12288, 96, 96, 4 * 12288, false, 2048, 51200};
  EXPECT_NEAR(double(parameters(gpt3)) / 175e9, 1.0, 0.01);
  ModelSpec llama{"", 126, 16384, 128, 8, 53248, true, 8192, 128256};
  EXPECT_NEAR(double(parameters(llama)) / 405e9, 1.0, 0.01);
}

TEST(Train, AnInconsistentJobNamesTheFieldAndTheNumbers) {
  auto error = [](const std::string& text) {
    Result<TrainJob> job = parse_job(text, "/tmp/job.yaml");
    return job ? std::string("no error") : job.error().message;
  };
  EXPECT_EQ(error("cluster: c.yaml\nmodel: {layers: 10, hidden: 64, heads: 4}\nparallel: {pp: 4, global_batch: 8}\ngpu: {type: h100}\n"),
            "/tmp/job.yaml:3:16: parallel.pp: 10 layers do not divide into 4 stages");
  EXPECT_EQ(error("cluster: c.yaml\nmodel: {layers: 8, hidden: 64, heads: 4}\nparallel: {tp: 8, global_batch: 8}\ngpu: {type: h100}\n"),
            "/tmp/job.yaml:3:16: parallel.tp: tp 8 does not divide the 4 heads");
  EXPECT_EQ(error("cluster: c.yaml\nmodel: {layers: 8, hidden: 64, heads: 4, hiden: 3}\nparallel: {global_batch: 8}\ngpu: {type: h100}\n"),
            "/tmp/job.yaml:2:42: model.hiden: unknown field; expected one of: name, layers, hidden, heads, kv_heads, ffn, swiglu, seq, vocab, dropout");
  EXPECT_EQ(error("cluster: c.yaml\nmodel: {layers: 8, hidden: 64, heads: 4}\nparallel: {global_batch: 8}\ngpu: {type: v100}\n"),
            "/tmp/job.yaml:4:13: gpu.type: expected a100, a100-40g, h100, h800 (or give peak_tflops), got \"v100\"");

  TrainJob job = parsed(kMtNlg);
  job.source = "mt.yaml";
  EXPECT_EQ(check_split(job, 300, 8).message(),
            "mt.yaml: parallel: tp 8 × pp 35 does not divide the cluster's 2400 accelerators");
  job.parallel.dp = 9;
  EXPECT_EQ(check_split(job, 280, 8).message(),
            "mt.yaml: parallel: tp 8 × pp 35 × dp 9 = 2520, but the cluster has 2240 accelerators");
  job.parallel.dp = 0;
  EXPECT_TRUE(check_split(job, 280, 8)) << "dp 8 fills 2,240";
  EXPECT_EQ(job.parallel.dp, 8u);
  EXPECT_TRUE(check_memory(job));
  job.parallel.zero1 = false, job.gpu.memory_gib = 24;  // Adam's 12 bytes per parameter unsharded
  const std::string why = check_memory(job).message();
  EXPECT_NE(why.find("the model does not fit"), std::string::npos) << why;
  EXPECT_NE(why.find("gpu.memory_gib is 24"), std::string::npos) << why;
}

TEST(Train, OneFOneBFillsAndDrainsAndInterleavingShortensTheBubble) {
  TrainJob job = parsed(kMtNlg);
  ASSERT_TRUE(check_split(job, 280, 8));
  const Communication none;  // compute alone
  const Iteration it = combine(job, none);
  const double m = 1920 / 8;
  EXPECT_NEAR(it.iteration, (m + 34) * (it.forward + it.backward), 1e-9 * it.iteration);
  // Backward: twice forward (the last stage's, with the logits), and the recompute of its 3 layers.
  const double recompute = 2048.0 * 3 * layer_forward_flops_per_token(job.model) / 8 / (312e12 * job.gpu.efficiency);
  EXPECT_NEAR(it.backward, 2 * it.forward + recompute, 1e-9 * it.backward);
  EXPECT_NEAR(it.bubble / it.iteration, 34 / (m + 34), 1e-9);
  // The model FLOP rate the paper quotes follows from the time: 60.1 s at 2,240 GPUs.
  Result<double> e = fit_efficiency(job, none, 60.1);
  ASSERT_TRUE(e) << e.error().message;
  job.gpu.efficiency = *e;
  EXPECT_NEAR(combine(job, none).iteration, 60.1, 1e-6);
  // The same job at 2,800 GPUs: fewer micro-batches per pipeline, a larger bubble share.
  TrainJob wider = job;
  wider.parallel.dp = 0;
  ASSERT_TRUE(check_split(wider, 350, 8));
  EXPECT_GT(combine(wider, none).bubble / combine(wider, none).iteration, it.bubble / it.iteration);

  // 5 stages of 21 layers, 10 micro-batches: 3 chunks a stage cut the bubble to a third.
  TrainJob flat = job;
  flat.parallel.pp = 5, flat.parallel.dp = 0, flat.parallel.global_batch = 560;
  ASSERT_TRUE(check_split(flat, 280, 8));
  TrainJob chunks = flat;
  chunks.parallel.virtual_stages = 3;
  ASSERT_TRUE(check_split(chunks, 280, 8));
  EXPECT_NEAR(combine(chunks, none).bubble * 3, combine(flat, none).bubble, 1e-9);
  chunks.parallel.global_batch = 56 * 12;  // 12 micro-batches: not a multiple of the 5 stages
  EXPECT_EQ(check_split(chunks, 280, 8).message(),
            "/tmp/job.yaml: parallel: the interleaved schedule needs the 12 micro-batches per pipeline to be a multiple of pp 5");
  EXPECT_GT(fit_efficiency(job, none, 1.0).error().message.size(), 0u) << "1 s is faster than the peak allows";
}

TEST(Train, HiddenGradientReductionCostsOnlyItsLastBucket) {
  TrainJob job = parsed(kMtNlg);
  ASSERT_TRUE(check_split(job, 280, 8));
  Communication c;
  c.has_dp = true, c.zero1 = false;
  c.dp.bytes = job.parallel.bucket_bytes, c.dp.time_us = 1000;
  job.parallel.zero1 = false;
  const Iteration exposed = combine(job, c);
  EXPECT_NEAR(exposed.dp_exposed, exposed.dp_total, 1e-12);
  EXPECT_GT(exposed.dp_total, 0.01);
  job.parallel.overlap_grad_reduce = true;
  const Iteration hidden = combine(job, c);
  EXPECT_NEAR(hidden.dp_total, exposed.dp_total, 1e-12);
  EXPECT_NEAR(hidden.dp_exposed, 1000e-6, 1e-12);  // it all fits behind one backward pass but the last bucket
}

TEST(Train, GroupsAreEvenlySpacedServersOfConsecutiveAccelerators) {
  ParallelSpec p;
  p.tp = 8, p.pp = 4, p.dp = 2;
  EXPECT_EQ(slot_of(p, 8, 3, 1, 2).server, 5u);  // g = 3 + 8·(1 + 2·2) = 43
  EXPECT_EQ(slot_of(p, 8, 3, 1, 2).local, 3u);
  Result<CollectiveOptions> stages = as_ranks({{0, 3}, {2, 3}, {4, 3}, {6, 3}});
  ASSERT_TRUE(stages);
  EXPECT_EQ(stages->server_stride, 2u);
  EXPECT_EQ(stages->servers, 4u);
  EXPECT_EQ(stages->per_server, 1u);
  EXPECT_EQ(stages->first_local, 3u);
  EXPECT_FALSE(as_ranks({{0, 0}, {1, 0}, {3, 0}}));
  EXPECT_FALSE(as_ranks({{0, 0}, {0, 2}}));
}

// A job on a real fabric: the communication is simulated, so a fabric with thinner spine
// uplinks makes the data-parallel reduction (across ToRs) slower, the rest unchanged.
TEST(Train, CommunicationComesFromTheFabric) {
  const fs::path dir = temp_dir("fabric");
  auto job_on = [&](double oversubscription) {
    topo::GenOptions g;
    g.gpus = 256, g.radix = 16, g.oversubscription = oversubscription;  // 4 servers per rail ToR
    Result<topo::ClusterSpec> spec = topo::generate(g);
    EXPECT_TRUE(spec) << spec.error().message;
    const fs::path path = dir / ("c" + std::to_string(int(oversubscription)) + ".yaml");
    EXPECT_TRUE(topo::save_spec(*spec, path.string()));
    TrainJob job = parsed(
        "cluster: c.yaml\nmodel: {layers: 8, hidden: 2048, heads: 16, seq: 1024, vocab: 32000}\n"
        "parallel: {tp: 8, pp: 2, global_batch: 64}\ngpu: {type: h100}\n");
    job.cluster_path = path.string();
    job.simulated_bytes = 1 << 20;  // larger messages extrapolated: a quicker test
    Result<Iteration> it = simulate_iteration(job);
    EXPECT_TRUE(it) << it.error().message;
    return it ? *it : Iteration{};
  };
  const Iteration full = job_on(1), thin = job_on(2);
  ASSERT_TRUE(full.comm.has_dp && full.comm.has_tp && full.comm.has_pp);
  EXPECT_EQ(full.comm.dp.groups, 16u);  // tp × pp groups of 16 ranks, all at once
  EXPECT_EQ(full.comm.dp.ranks, 16u);
  EXPECT_EQ(full.comm.pp.groups, 8u * 16u);
  EXPECT_GT(thin.comm.dp.time_us, 1.3 * full.comm.dp.time_us);
  EXPECT_NEAR(thin.comm.tp.time_us, full.comm.tp.time_us, 1e-9);  // inside the servers
  EXPECT_GT(thin.iteration, full.iteration);
  EXPECT_NEAR(full.iteration, full.compute + full.tp_exposed + full.pp_exposed + full.bubble + full.dp_exposed,
              1e-9 * full.iteration);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xm::sim::train
