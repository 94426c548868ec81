// Simulator speed on fixed scenarios: events per second, simulated time per wall-clock
// second, and peak memory. Each benchmark builds the network, adds its flows, and times
// Network::run only. Figures and the command that produced them: docs/performance.md.
//
// Run one scenario per process for a clean peak-memory figure (bench/sim_speed.sh does).
#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "sim/cc/cc.h"
#include "sim/network.h"
#include "sim/report.h"
#include "sim/scenario.h"

namespace xm::sim {
namespace {

const std::string kExamples = XM_EXAMPLES_DIR;

// A scenario file's topology and flows, with its traffic window shortened to `ms`.
void run_scenario_file(benchmark::State& state, const std::string& file, const std::string& cc_name, double ms) {
  Result<Scenario> scenario = load_scenario(kExamples + "/sim/" + file);
  if (!scenario) return state.SkipWithError(scenario.error().message.c_str());
  for (TrafficSpec& t : scenario->traffic) t.poisson.duration = Time::ms(ms);
  Result<SimTopology> topology = scenario_topology(*scenario);
  if (!topology) return state.SkipWithError(topology.error().message.c_str());
  Result<Traffic> traffic = scenario_flows(*scenario, *topology);
  if (!traffic) return state.SkipWithError(traffic.error().message.c_str());
  const std::vector<FlowSpec>* flows = &traffic->flows;
  const Rate line = line_rate(*topology);
  uint64_t events = 0;
  double sim_seconds = 0, wall_seconds = 0;
  size_t flows_done = 0;
  for (auto _ : state) {
    auto cc = std::move(make_cc(cc_name, line)).value();
    Network net(*topology, scenario->network, *cc, scenario->seed);
    for (const FlowSpec& f : *flows) (void)net.add_flow(f);
    const auto t0 = std::chrono::steady_clock::now();
    net.run(scenario->stop);
    wall_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    events += net.events();
    sim_seconds += net.now().seconds_f();
    flows_done = net.counters().flows_done;
  }
  state.counters["events_per_s"] = benchmark::Counter(double(events) / wall_seconds);
  state.counters["Mevents"] = benchmark::Counter(double(events) / 1e6 / double(state.iterations()));
  state.counters["sim_ms_per_wall_s"] = benchmark::Counter(sim_seconds * 1e3 / wall_seconds);
  state.counters["flows"] = benchmark::Counter(double(flows_done));
  state.counters["peak_rss_MiB"] = benchmark::Counter(double(peak_rss_kb()) / 1024);
}

// The HPCC paper's fat-tree (320 × 100 Gbit/s), WebSearch at 30 % for 1 ms, HPCC.
void BM_FatTree320_WebSearch30_1ms_Hpcc(benchmark::State& s) { run_scenario_file(s, "websearch-30.yaml", "hpcc", 1); }
// The same at 50 % with DCQCN (deeper queues, PFC).
void BM_FatTree320_WebSearch50_1ms_Dcqcn(benchmark::State& s) { run_scenario_file(s, "websearch-50.yaml", "dcqcn", 1); }
// The rail-optimized 3.2 Tbit/s fabric (256 × 400 Gbit/s) at 90 % for 0.5 ms, TiTa.
void BM_Rail256_WebSearch90_05ms_Tita(benchmark::State& s) { run_scenario_file(s, "rail-90.yaml", "tita", 0.5); }
// A 16-to-1 incast of 2 MB each, with no congestion control: PFC holds the burst.
void BM_Incast16_None(benchmark::State& s) { run_scenario_file(s, "incast-16.yaml", "none", 1); }

BENCHMARK(BM_FatTree320_WebSearch30_1ms_Hpcc)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_FatTree320_WebSearch50_1ms_Dcqcn)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Rail256_WebSearch90_05ms_Tita)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();
BENCHMARK(BM_Incast16_None)->Unit(benchmark::kSecond)->Iterations(1)->UseRealTime();

}  // namespace
}  // namespace xm::sim

BENCHMARK_MAIN();
