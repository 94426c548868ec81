// How ports are laid out and where a switch forwards a packet.
//
// Wiring gives every node a contiguous range of ports, one per incident link (so a
// switch's per-port state is a dense array), and pairs each port with the peer's port on
// the same link. Routing holds, for every switch and destination host, the local ports
// on a shortest path: the equal-cost set that ECMP hashes over. Hosts never forward.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "sim/topology.h"

namespace xm::sim {

using PortId = uint32_t;

struct Wiring {
  std::vector<PortId> first_port;  // node_count() + 1 offsets
  std::vector<NodeIndex> owner;    // per port
  std::vector<NodeIndex> peer_node;
  std::vector<PortId> peer_port;   // the peer's port on the same link
  std::vector<uint32_t> link;      // the link a port sends on

  uint32_t ports_of(NodeIndex n) const { return first_port[n + 1] - first_port[n]; }
  size_t port_count() const { return owner.size(); }
};

Wiring wire(const SimTopology& topology);

class Routing {
 public:
  // `excluded`, if given: per link, true for links routes must avoid (down or drained).
  Routing(const SimTopology& topology, const Wiring& wiring, const std::vector<char>* excluded = nullptr);

  // Local port indices (0-based within the switch) on shortest paths from switch `sw`
  // to host `dst`. Empty only if unreachable (check_topology rules that out, but links
  // taken out of routing can cut a host off).
  std::span<const uint16_t> next_hops(NodeIndex sw, uint32_t dst) const {
    const uint32_t g = group_[size_t(sw - hosts_) * hosts_ + dst];
    return {hops_.data() + group_begin_[g], hops_.data() + group_begin_[g + 1]};
  }
  // Ports of host `src` (global ids) on shortest paths to host `dst`: all of a host's
  // ports for a NIC whose ports all reach the fabric alike, only the intra-server one
  // for a peer in the same server (also where its ToR is as near: a Clos ToR that holds
  // all of a server's NICs), as accelerators of one server talk over NVLink.
  std::vector<PortId> host_ports(uint32_t src, uint32_t dst) const;
  // Links on one shortest path from host `src` to host `dst` (first equal-cost choice at
  // every hop), in order. For ideal completion times and base RTTs.
  std::vector<uint32_t> path_links(uint32_t src, uint32_t dst) const;

 private:
  // Most destinations share their next-hop set with many others (every host behind the
  // same ToR, seen from a core switch), so each (switch, destination) names one of a few
  // distinct sets: a 2-byte entry per pair keeps the table small enough to stay cached.
  // Hops from switch `sw` to host `dst` along first choices; UINT32_MAX if unreachable.
  uint32_t hops_to(NodeIndex sw, uint32_t dst) const;

  const Wiring* wiring_;
  uint32_t hosts_;
  std::vector<uint16_t> group_;         // per (switch, destination host): its set
  std::vector<uint32_t> group_begin_;   // per set + 1: offsets into hops_
  std::vector<uint16_t> hops_;
  std::vector<char> intra_;  // per node: an intra-server switch
};

}  // namespace xm::sim
