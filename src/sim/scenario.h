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

struct Scenario {
  std::string name;
  std::string source;          // the file it came from
  uint64_t seed = 1;
  std::string spec_path;       // cluster spec (resolved), or
  std::string hpcc_topology;   // HPCC topology file (resolved)
  NetConfig network;
  std::vector<std::string> cc{"dcqcn", "hpcc", "tita"};
  std::vector<TrafficSpec> traffic;
  Time stop = Time::seconds(1);
  std::vector<uint64_t> buckets;
};

Result<Scenario> parse_scenario(std::string_view text, const std::string& source);
Result<Scenario> load_scenario(const std::string& path);

// The topology and flows a scenario describes; the flows depend only on the scenario
// (seed included), never on the algorithm. With collective traffic the topology has the
// servers' intra-server switches.
Result<SimTopology> scenario_topology(const Scenario& scenario);
struct Traffic {
  std::vector<FlowSpec> flows;
  std::vector<CollectiveReplay> collectives;  // which of the flows each collective is
};
Result<Traffic> scenario_flows(const Scenario& scenario, const SimTopology& topology);

}  // namespace xm::sim
