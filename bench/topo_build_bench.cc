// How long the topology model takes at scale: generate a spec, build its fabric graph,
// summarise it, and answer a path query, for fabrics from 1k to 100k accelerators.
//
//   build/default/bench/topo_build_bench
// Peak memory and the side-by-side run against networkx: bench/topo_scale.sh.
#include <benchmark/benchmark.h>

#include "topo/generate.h"
#include "topo/metrics.h"
#include "topo/paths.h"

namespace {

using namespace xm::topo;

ClusterSpec spec_for(int64_t gpus) {
  GenOptions o;
  o.gpus = static_cast<uint32_t>(gpus);
  return generate(o).value();
}

void BM_BuildFabric(benchmark::State& state) {
  ClusterSpec spec = spec_for(state.range(0));
  size_t links = 0;
  for (auto _ : state) {
    xm::Result<Fabric> f = build_fabric(spec);
    links = f->link_count();
    benchmark::DoNotOptimize(links);
  }
  state.counters["links"] = double(links);
  state.counters["links/s"] = benchmark::Counter(double(links), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_BuildFabric)->Arg(1024)->Arg(16384)->Arg(102400)->Unit(benchmark::kMillisecond);

void BM_Summarize(benchmark::State& state) {
  Fabric f = build_fabric(spec_for(state.range(0))).value();
  for (auto _ : state) benchmark::DoNotOptimize(summarize(f).bisection_gbps);
}
BENCHMARK(BM_Summarize)->Arg(1024)->Arg(102400)->Unit(benchmark::kMillisecond);

void BM_FarthestPairPaths(benchmark::State& state) {
  Fabric f = build_fabric(spec_for(state.range(0))).value();
  NodeId a = f.accelerator(0, 0), b = f.accelerator(f.spec().servers - 1, 0);
  for (auto _ : state) benchmark::DoNotOptimize(equal_cost_paths(f, a, b, 4)->paths);
}
BENCHMARK(BM_FarthestPairPaths)->Arg(1024)->Arg(102400)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
