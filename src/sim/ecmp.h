// ECMP as the simulated switches do it: a flow's path is a pure function of its 5-tuple
// and each switch's seed. Written once so that the packet engine and the flow engine put
// the same flow on the same links (and the same flows collide).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/random.h"
#include "sim/routing.h"

namespace xm::sim {

// The hash of a 5-tuple (IPs are host indices, UDP ports, protocol UDP), one direction.
inline uint32_t flow_hash(uint32_t src, uint32_t dst, uint16_t sport, uint16_t dport) {
  const uint64_t tuple = (uint64_t(src) << 32 | dst) ^ (uint64_t(sport) << 16 | dport) << 8;
  return uint32_t(mix64(tuple ^ 17));
}

// Switch s's seed in a network seeded `seed`, so consecutive switches do not make
// correlated choices.
inline uint64_t switch_seed(uint64_t seed, NodeIndex s) { return mix64(seed ^ (uint64_t(s) * 0x9e3779b97f4a7c15ull)); }

// Which of `choices` equal-cost next hops a packet of hash `key` (already mixed with
// the switch's seed) takes.
inline uint32_t ecmp_pick(uint64_t key, size_t choices) { return uint32_t((mix64(key) >> 32) * choices >> 32); }

// The ports a flow's packets leave on, from `first` (the sender's port) to the receiver:
// what switches pick for `hash` with `seeds` (per switch, index s - hosts).
inline std::vector<PortId> ecmp_path(const Wiring& w, const Routing& routing, uint32_t hosts, PortId first,
                                     uint32_t dst, uint32_t hash, const std::vector<uint64_t>& seeds) {
  std::vector<PortId> ports{first};
  for (NodeIndex at = w.peer_node[first]; at != dst && ports.size() < 64;) {
    const auto hops = routing.next_hops(at, dst);
    if (hops.empty()) return {};
    const uint32_t choice = hops.size() > 1 ? ecmp_pick(hash ^ seeds[at - hosts], hops.size()) : 0;
    ports.push_back(w.first_port[at] + hops[choice]);
    at = w.peer_node[ports.back()];
  }
  return ports;
}

}  // namespace xm::sim
