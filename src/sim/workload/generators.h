// Workloads: the flows a scenario runs. Each generator is a pure function of its options,
// the topology and a seeded generator, so a scenario and a seed fix the flows exactly.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/flow.h"
#include "sim/random.h"
#include "sim/topology.h"
#include "sim/workload/cdf.h"
#include "util/result.h"

namespace xm::sim {

// Every host starts flows with exponential gaps so that, on average, it offers `load` of
// its line rate (sizes from the CDF, payload bytes); destinations are uniform over the
// other hosts — of the same rail only, if `same_rail`.
struct PoissonOptions {
  double load = 0.3;
  Time start;
  Time duration = Time::ms(10);
  bool same_rail = false;
};
Result<std::vector<FlowSpec>> poisson_flows(const SimTopology& topology, const FlowSizeCdf& cdf,
                                            const PoissonOptions& options, Random& rng);

// `senders` hosts (a random choice, never the receiver) each send `bytes` to `receiver`
// at `start`, and again every `interval` for `rounds` rounds.
struct IncastOptions {
  uint32_t receiver = 0;
  uint32_t senders = 16;
  uint64_t bytes = 500'000;
  Time start;
  uint32_t rounds = 1;
  Time interval = Time::us(100);
};
Result<std::vector<FlowSpec>> incast_flows(const SimTopology& topology, const IncastOptions& options, Random& rng);

// A random permutation without fixed points: every host sends `bytes` to one other host
// and receives from one.
struct PermutationOptions {
  uint64_t bytes = 1'000'000;
  Time start;
};
Result<std::vector<FlowSpec>> permutation_flows(const SimTopology& topology, const PermutationOptions& options,
                                                Random& rng);

// Ring all-reduce across the rails: on every rail, the hosts of that rail in server
// order form a ring; each all-reduces `bytes` in 2(n-1) steps of bytes/n to the next
// host, and a host sends step k+1 once it has received step k from its predecessor (the
// flow's `group` is its step). `first_flow_id` is the id the network will give the
// first flow returned (dependencies are by id).
struct AllReduceOptions {
  uint64_t bytes = 8'000'000;
  Time start;
};
Result<std::vector<FlowSpec>> ring_allreduce_flows(const SimTopology& topology, const AllReduceOptions& options,
                                                   uint32_t first_flow_id);

}  // namespace xm::sim
