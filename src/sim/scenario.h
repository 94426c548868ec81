// A simulation scenario, as people write it in YAML (examples/sim/*.yaml, docs/simulator.md):
// the fabric (a cluster spec or an HPCC topology file), network settings, the algorithms
// to compare, the traffic, and when to stop. Paths are relative to the scenario file.
//
//   name: websearch-30
//   seed: 1
//   topology: {spec: ../hpcc-fat-tree-320.yaml}     # or {hpcc: topology.txt}
//   network: {mtu: 1000, pfc: true, buffer_mb: 32}  # any NetConfig field, see docs
//   cc: [dcqcn, hpcc, tita]
//   traffic:
//     - poisson: {cdf: cdf/WebSearch_distribution.txt, load: 0.3, duration_ms: 10}
//     - incast: {receiver: 0, senders: 16, bytes: 500000, start_us: 100}
//     - collective: {op: all_reduce, bytes: 16M, algorithm: auto, ranks: {servers: 4}, rails: own}
//   events:                                        # links that fail, drain, degrade
//     - {at_us: 2000, link: [agg-p0-0, core-g0-0], set: down}   # or up, drain, restore
//     - {at_us: 0, link: [tor-s0, agg-p0-0], loss: 0.01}       # or rate_gbps: 50
//   stop_ms: 200
//
// Errors name the file, line, column and field and say what was expected; unknown and
// repeated keys are errors.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/collective/collective.h"
#include "sim/config.h"
#include "sim/flow.h"
#include "sim/topology.h"
#include "sim/workload/generators.h"
#include "util/result.h"

namespace xm::sim {

struct TrafficSpec {
  enum class Kind { kPoisson, kIncast, kPermutation, kAllReduce, kHpccFlows, kCollective } kind = Kind::kPoisson;
  std::string path;  // poisson: the CDF file; hpcc_flows: the flow file (resolved)
  PoissonOptions poisson;
  IncastOptions incast;
  PermutationOptions permutation;
  AllReduceOptions allreduce;
  CollectiveOptions collective;
};

// A link event as written: the link by its two ends' names ([a, "b#1"] for the second of
// parallel links), resolved against the topology when the scenario runs.
struct LinkEventSpec {
  LinkEvent event;     // all but the link
  std::string a, b;
  uint32_t parallel = 0;  // which of several links between a and b
  std::string where;   // "file:line:col: events[i].link" for errors found then
};

struct Scenario {
  std::string name;
  std::string source;          // the file it came from
  uint64_t seed = 1;
  std::string spec_path;       // cluster spec (resolved), or
  std::string hpcc_topology;   // HPCC topology file (resolved)
  NetConfig network;
  std::vector<std::string> cc{"dcqcn", "hpcc", "tita"};
  std::vector<TrafficSpec> traffic;
  std::vector<LinkEventSpec> events;
  Time stop = Time::seconds(1);
  std::vector<uint64_t> buckets;
};

Result<Scenario> parse_scenario(std::string_view text, const std::string& source);
Result<Scenario> load_scenario(const std::string& path);

// The HPCC simulator's experiment (its config file) as a scenario: its topology and flow
// files, network and algorithm; `source` names it in errors, `seed` draws ECMP and ECN.
struct HpccExperiment;
Scenario hpcc_scenario(const HpccExperiment& experiment, const std::string& source, uint64_t seed);

// The topology and flows a scenario describes; the flows depend only on the scenario
// (seed included), never on the algorithm. With collective traffic the topology has the
// servers' intra-server switches.
Result<SimTopology> scenario_topology(const Scenario& scenario);
struct Traffic {
  std::vector<FlowSpec> flows;
  std::vector<CollectiveReplay> collectives;  // which of the flows each collective is
};
Result<Traffic> scenario_flows(const Scenario& scenario, const SimTopology& topology);
// The scenario's link events with their links found in `topology` by name.
Result<std::vector<LinkEvent>> scenario_link_events(const Scenario& scenario, const SimTopology& topology);

}  // namespace xm::sim
