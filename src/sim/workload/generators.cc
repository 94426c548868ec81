#include "sim/workload/generators.h"

#include <algorithm>
#include <map>

namespace xm::sim {
namespace {

Rate host_rate(const SimTopology& t, uint32_t host) {
  for (const SimLink& l : t.links)
    if (l.a == host || l.b == host) return l.rate;
  return Rate::bps(0);
}

}  // namespace

Result<std::vector<FlowSpec>> poisson_flows(const SimTopology& t, const FlowSizeCdf& cdf,
                                            const PoissonOptions& o, Random& rng) {
  if (!(o.load > 0 && o.load <= 1)) return Error{"poisson: load must be in (0, 1]"};
  if (o.duration <= Time()) return Error{"poisson: duration must be positive"};
  // Destinations per host: everyone else, or everyone else on the same rail.
  std::map<uint32_t, std::vector<uint32_t>> by_rail;
  for (uint32_t h = 0; h < t.hosts; ++h) by_rail[o.same_rail ? t.rail[h] : 0].push_back(h);
  std::vector<FlowSpec> flows;
  const double mean_bits = cdf.mean() * 8;
  for (uint32_t src = 0; src < t.hosts; ++src) {
    const std::vector<uint32_t>& peers = by_rail[o.same_rail ? t.rail[src] : 0];
    if (peers.size() < 2) continue;
    const double gap_s = mean_bits / (o.load * host_rate(t, src).bps());
    for (double at = rng.exponential(gap_s); at < o.duration.seconds_f(); at += rng.exponential(gap_s)) {
      uint32_t dst;
      do dst = peers[rng.below(peers.size())];
      while (dst == src);
      FlowSpec f;
      f.src = src, f.dst = dst, f.bytes = cdf.sample(rng);
      f.start = o.start + Time::seconds(at);
      flows.push_back(f);
    }
  }
  std::stable_sort(flows.begin(), flows.end(), [](const FlowSpec& a, const FlowSpec& b) { return a.start < b.start; });
  return flows;
}

Result<std::vector<FlowSpec>> incast_flows(const SimTopology& t, const IncastOptions& o, Random& rng) {
  if (o.receiver >= t.hosts) return Error{"incast: receiver " + std::to_string(o.receiver) + " is not a host"};
  if (o.senders == 0 || o.senders >= t.hosts)
    return Error{"incast: senders must be 1.." + std::to_string(t.hosts - 1)};
  if (o.bytes == 0) return Error{"incast: bytes must be positive"};
  std::vector<uint32_t> others;
  for (uint32_t h = 0; h < t.hosts; ++h)
    if (h != o.receiver) others.push_back(h);
  // Partial Fisher-Yates: the first `senders` entries are a uniform choice.
  for (uint32_t i = 0; i < o.senders; ++i) std::swap(others[i], others[i + rng.below(others.size() - i)]);
  std::vector<FlowSpec> flows;
  for (uint32_t r = 0; r < o.rounds; ++r)
    for (uint32_t i = 0; i < o.senders; ++i) {
      FlowSpec f;
      f.src = others[i], f.dst = o.receiver, f.bytes = o.bytes;
      f.start = o.start + o.interval * r;
      f.group = r;
      flows.push_back(f);
    }
  return flows;
}

Result<std::vector<FlowSpec>> permutation_flows(const SimTopology& t, const PermutationOptions& o, Random& rng) {
  if (t.hosts < 2) return Error{"permutation: needs two hosts"};
  if (o.bytes == 0) return Error{"permutation: bytes must be positive"};
  // Sattolo's algorithm: a uniformly random single cycle, so nobody sends to itself.
  std::vector<uint32_t> next(t.hosts);
  for (uint32_t i = 0; i < t.hosts; ++i) next[i] = i;
  for (uint32_t i = t.hosts - 1; i > 0; --i) std::swap(next[i], next[rng.below(i)]);
  std::vector<FlowSpec> flows;
  for (uint32_t src = 0; src < t.hosts; ++src) {
    FlowSpec f;
    f.src = src, f.dst = next[src], f.bytes = o.bytes, f.start = o.start;
    flows.push_back(f);
  }
  return flows;
}

Result<std::vector<FlowSpec>> ring_allreduce_flows(const SimTopology& t, const AllReduceOptions& o,
                                                   uint32_t first_flow_id) {
  std::map<uint32_t, std::vector<uint32_t>> rails;
  for (uint32_t h = 0; h < t.hosts; ++h) rails[t.rail[h]].push_back(h);
  std::vector<FlowSpec> flows;
  for (auto& [rail, ring] : rails) {
    std::stable_sort(ring.begin(), ring.end(), [&](uint32_t a, uint32_t b) { return t.server[a] < t.server[b]; });
    const uint32_t n = uint32_t(ring.size());
    if (n < 2) continue;
    const uint64_t chunk = std::max<uint64_t>(1, o.bytes / n);
    const uint32_t steps = 2 * (n - 1);
    // flow id of (step, position) = base + step * n + position
    const uint32_t base = first_flow_id + uint32_t(flows.size());
    for (uint32_t step = 0; step < steps; ++step)
      for (uint32_t i = 0; i < n; ++i) {
        FlowSpec f;
        f.src = ring[i], f.dst = ring[(i + 1) % n], f.bytes = chunk, f.start = o.start, f.group = step;
        if (step > 0) f.after.push_back(base + (step - 1) * n + (i + n - 1) % n);  // predecessor's previous step
        flows.push_back(f);
      }
  }
  if (flows.empty()) return Error{"allreduce: no rail has two hosts"};
  return flows;
}

}  // namespace xm::sim
