#include "sim/train/comm.h"

#include <algorithm>
#include <cstdio>

#include "sim/run.h"
#include "sim/train/model.h"

namespace xm::sim::train {

Slot slot_of(const ParallelSpec& p, uint32_t per_server, uint32_t t, uint32_t d, uint32_t s) {
  const uint64_t g = t + uint64_t(p.tp) * (d + uint64_t(p.dp) * s);
  return {uint32_t(g / per_server), uint32_t(g % per_server)};
}

Result<CollectiveOptions> as_ranks(const std::vector<Slot>& group) {
  CollectiveOptions c;
  if (group.empty()) return Error{"an empty group"};
  c.first_server = group[0].server, c.first_local = group[0].local;
  uint32_t per = 0;
  while (per < group.size() && group[per].server == group[0].server) ++per;
  c.per_server = per;
  c.servers = uint32_t(group.size() / per);
  c.server_stride = c.servers > 1 ? group[per].server - group[0].server : 1;
  for (size_t i = 0; i < group.size(); ++i) {
    const Slot want{c.first_server + uint32_t(i / per) * c.server_stride, c.first_local + uint32_t(i % per)};
    if (group.size() % per || c.server_stride == 0 || group[i].server != want.server || group[i].local != want.local)
      return Error{"a group whose ranks are not consecutive accelerators of evenly spaced servers (rank " +
                   std::to_string(i) + " on server " + std::to_string(group[i].server) + ", accelerator " +
                   std::to_string(group[i].local) + ")"};
  }
  return c;
}

namespace {

// All `groups` at once, each running `op` on `bytes`; the slowest group's time.
Result<CommKind> run_kind(const TrainJob& job, const SimTopology& topology, const std::string& kind,
                          sched::Collective op, uint64_t bytes, const std::vector<std::vector<Slot>>& groups,
                          const std::function<void(const std::string&)>& log) {
  Scenario scenario;
  scenario.name = job.name + "-" + kind;
  scenario.source = job.source;
  scenario.spec_path = job.cluster_path;
  scenario.cc = {"flow"};
  scenario.stop = Time::seconds(1e4);
  for (size_t i = 0; i < groups.size(); ++i) {
    Result<CollectiveOptions> c = as_ranks(groups[i]);
    if (!c) return Error{job.source + ": " + kind + " group " + std::to_string(i) + ": " + c.error().message};
    c->name = kind + std::to_string(i), c->op = op, c->bytes = bytes;
    TrafficSpec t;
    t.kind = TrafficSpec::Kind::kCollective;
    t.collective = std::move(*c);
    scenario.traffic.push_back(std::move(t));
  }
  RunSettings settings;
  settings.engine = EngineKind::kFlow;
  Result<std::vector<Report>> reports = run_scenario(scenario, topology, settings);
  if (!reports) return reports.error();
  const Report& rep = reports->front();
  CommKind k;
  k.kind = kind, k.op = sched::to_string(op), k.bytes = bytes;
  k.groups = uint32_t(groups.size()), k.ranks = uint32_t(groups[0].size());
  k.wall_seconds = rep.wall_seconds;
  for (const CollectiveResult& r : rep.collectives) {
    if (r.finished < r.flows) return Error{job.source + ": " + kind + ": " + r.name + " did not finish"};
    k.flows += r.flows;
    if (r.time_us >= k.time_us) k.time_us = r.time_us, k.busbw_gbs = r.busbw_gbs, k.algorithm = r.algorithm;
  }
  if (log) {
    char line[200];
    std::snprintf(line, sizeof line, "%-9s %-14s %4u groups × %5u ranks  %12llu B  %11.1f us  (%s, %zu flows, %.1f s)",
                  kind.c_str(), k.op.c_str(), k.groups, k.ranks, static_cast<unsigned long long>(bytes), k.time_us,
                  k.algorithm.c_str(), k.flows, k.wall_seconds);
    log(line);
  }
  return k;
}

// Large messages are bandwidth-bound: above 2 × `cap` the time is the line through the
// simulated times at cap and 2 × cap (a 128 MiB bucket on 16k ranks would be millions of
// flows for what two smaller runs pin down).
Result<CommKind> run_scaled(const TrainJob& job, const SimTopology& topology, const std::string& kind,
                            sched::Collective op, uint64_t bytes, const std::vector<std::vector<Slot>>& groups,
                            const std::function<void(const std::string&)>& log) {
  const uint64_t cap = job.simulated_bytes;
  if (bytes <= 2 * cap) return run_kind(job, topology, kind, op, bytes, groups, log);
  Result<CommKind> small = run_kind(job, topology, kind, op, cap, groups, log);
  if (!small) return small;
  Result<CommKind> twice = run_kind(job, topology, kind, op, 2 * cap, groups, log);
  if (!twice) return twice;
  CommKind k = *twice;
  const double per_byte = (twice->time_us - small->time_us) / double(cap);
  k.bytes = bytes, k.simulated_bytes = cap;
  k.time_us = small->time_us + per_byte * double(bytes - cap);
  k.busbw_gbs = twice->busbw_gbs * (twice->time_us / k.time_us) * (double(bytes) / double(2 * cap));
  k.flows = small->flows + twice->flows, k.wall_seconds = small->wall_seconds + twice->wall_seconds;
  if (log) {
    char line[200];
    std::snprintf(line, sizeof line, "%-9s %-14s extrapolated to %llu B: %.1f us", kind.c_str(), k.op.c_str(),
                  static_cast<unsigned long long>(bytes), k.time_us);
    log(line);
  }
  return k;
}

}  // namespace

Result<Communication> simulate_communication(const TrainJob& job, const SimTopology& topology,
                                             const std::function<void(const std::string&)>& log) {
  const uint32_t per_server = uint32_t(topology.accelerator_nic.at(0).size());
  const ParallelSpec& p = job.parallel;
  const ModelSpec& m = job.model;
  const uint64_t activations = uint64_t(p.micro_batch) * m.seq * m.hidden * 2;  // bf16, one micro-batch
  Communication out;
  out.zero1 = p.zero1;
  std::vector<std::vector<Slot>> groups;
  // Tensor parallel: the layers' all-reduces of the activations. A group inside one
  // server is alone on its server's fabric, so one stands for all.
  if (p.tp > 1) {
    const uint32_t count = p.tp <= per_server ? 1 : p.dp * p.pp;
    groups.assign(count, {});
    for (uint32_t i = 0; i < count; ++i)
      for (uint32_t t = 0; t < p.tp; ++t) groups[i].push_back(slot_of(p, per_server, t, i % p.dp, i / p.dp));
    Result<CommKind> k = run_scaled(job, topology, "tp", sched::Collective::kAllReduce, activations, groups, log);
    if (!k) return k.error();
    out.tp = *k, out.has_tp = true;
  }
  // Pipeline parallel: every boundary passes a micro-batch's activations at once, each
  // tensor-parallel rank its 1/tp share (Megatron's scatter-gather), as a send.
  if (p.pp > 1) {
    groups.clear();
    for (uint32_t s = 0; s + 1 < p.pp; ++s)
      for (uint32_t d = 0; d < p.dp; ++d)
        for (uint32_t t = 0; t < p.tp; ++t)
          groups.push_back({slot_of(p, per_server, t, d, s), slot_of(p, per_server, t, d, s + 1)});
    Result<CommKind> k = run_scaled(job, topology, "pp", sched::Collective::kBroadcast, std::max<uint64_t>(activations / p.tp, 1),
                                  groups, log);
    if (!k) return k.error();
    out.pp = *k, out.has_pp = true;
  }
  // Data parallel: every group reduces one bucket of gradients at once.
  if (p.dp > 1) {
    groups.assign(uint64_t(p.tp) * p.pp, {});
    for (uint32_t s = 0; s < p.pp; ++s)
      for (uint32_t t = 0; t < p.tp; ++t)
        for (uint32_t d = 0; d < p.dp; ++d) groups[s * p.tp + t].push_back(slot_of(p, per_server, t, d, s));
    const uint64_t grads = parameters_per_gpu(job) * p.grad_bytes;
    const uint64_t bucket = std::min<uint64_t>(p.bucket_bytes, grads);
    Result<CommKind> k = run_scaled(job, topology, "dp", p.zero1 ? sched::Collective::kReduceScatter : sched::Collective::kAllReduce,
                                  bucket, groups, log);
    if (!k) return k.error();
    out.dp = *k, out.has_dp = true;
    if (p.zero1) {  // the updated bf16 parameters back to every rank
      Result<CommKind> g = run_scaled(job, topology, "dp-gather", sched::Collective::kAllGather, bucket * 2 / p.grad_bytes, groups, log);
      if (!g) return g.error();
      out.dp_gather = *g;
    }
  }
  return out;
}

}  // namespace xm::sim::train
