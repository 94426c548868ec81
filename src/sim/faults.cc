// Links that fail, come back, are drained, re-rated or lose frames (LinkEvent), and the
// routes that follow them. See network.h.
//
// A link going down loses what is on its wire and what its two ports had queued; a switch
// stops using its own dead ports at once (local repair: ECMP hashes over the live ones),
// and every switch's routes are recomputed without the dead and drained links after
// NetConfig::reroute_delay (detection and route update). Until then a switch whose every
// next hop to a destination is dead drops what it gets for it, as a real one blackholes
// it. Senders find out as real NICs do: a NACK for the gap, or the retransmission timer.
#include <algorithm>

#include "sim/ecmp.h"
#include "sim/network.h"

namespace xm::sim {

Status Network::add_link_event(const LinkEvent& e) {
  if (ran_) return Error{"link events must be added before run()"};
  if (e.link >= topology_.links.size())
    return Error{"link event: link " + std::to_string(e.link) + " out of range (" +
                 std::to_string(topology_.links.size()) + " links)"};
  if (e.kind == LinkEvent::Kind::kRate && !(e.rate.bps() > 0)) return Error{"link event: rate must be above 0"};
  if (e.kind == LinkEvent::Kind::kLoss && !(e.loss >= 0 && e.loss <= 1)) return Error{"link event: loss must be in [0, 1]"};
  if (e.at < Time()) return Error{"link event: time must not be negative"};
  auto later = std::upper_bound(link_events_.begin(), link_events_.end(), e.at,
                                [](Time at, const LinkEvent& x) { return at < x.at; });
  link_events_.insert(later, e);  // in time order, ties in the order given
  if (!faults_) {
    faults_ = true;
    link_down_.assign(topology_.links.size(), 0);
    link_drained_.assign(topology_.links.size(), 0);
  }
  return Status::Ok();
}

void Network::apply_link_event(const LinkEvent& e) {
  const SimLink& link = topology_.links[e.link];
  PortId a = wiring_.first_port[link.a];
  while (wiring_.link[a] != e.link) ++a;
  const PortId b = wiring_.peer_port[a];
  bool routes_change = false;
  switch (e.kind) {
    case LinkEvent::Kind::kDown:
      if (link_down_[e.link]) return;
      link_down_[e.link] = 1, routes_change = true;
      link_down(a), link_down(b);
      break;
    case LinkEvent::Kind::kUp:
      if (!link_down_[e.link]) return;
      link_down_[e.link] = 0, routes_change = true;
      link_up(a), link_up(b);
      break;
    case LinkEvent::Kind::kDrain:
    case LinkEvent::Kind::kRestore:
      link_drained_[e.link] = e.kind == LinkEvent::Kind::kDrain;
      routes_change = true;
      break;
    case LinkEvent::Kind::kRate:
      ports_[a].rate = ports_[b].rate = e.rate;
      break;
    case LinkEvent::Kind::kLoss:
      ports_[a].loss = ports_[b].loss = float(e.loss);
      break;
  }
  if (routes_change) engine_.schedule(now() + config_.reroute_delay, target(kReroute, 0));
}

// One direction of a link dies: its wire's frames are lost on arrival, its queues now.
void Network::link_down(PortId p) {
  Port& port = ports_[p];
  port.up = false;
  for (PacketId id = port.pipe.head; id != kNoPacket; id = pool_[id].next) pool_[id].lost = true;
  while (!port.mac.empty()) drop(port.mac.pop_front(pool_));
  const bool is_switch = !topology_.is_host(port.owner);
  for (int cls = 0; cls < kClasses; ++cls) {
    while (!port.queue[cls].empty()) {
      const PacketId id = port.queue[cls].pop_front(pool_);
      const Packet& pkt = pool_[id];
      port.queued_bytes -= pkt.wire_bytes;
      if (is_switch) {
        const uint32_t in = pkt.in_port;
        SharedBuffer& buffer = buffers_[port.owner - topology_.hosts];
        if (buffer.depart(in, port.local, cls, pkt.wire_bytes) && ports_[wiring_.first_port[port.owner] + in].up)
          send_pfc(wiring_.first_port[port.owner] + in, PacketKind::kResume, cls);
      }
      ++counters_.lost_on_links;
      drop(id);
    }
  }
  port.backlog = 0;
}

// A fresh link: nothing is paused on it. A switch whose ingress on it had paused the peer
// says so again, so that both ends agree.
void Network::link_up(PortId p) {
  Port& port = ports_[p];
  port.up = true;
  for (int cls = 0; cls < kClasses; ++cls)
    if (port.paused & (1u << cls)) port.paused_total += now() - port.paused_since[cls];
  port.paused = 0;
  if (!topology_.is_host(port.owner)) {
    const SharedBuffer& buffer = buffers_[port.owner - topology_.hosts];
    for (int cls = 1; cls < kClasses; ++cls)
      if (buffer.paused(port.local, cls)) send_pfc(p, PacketKind::kPause, cls);
  }
  kick_later(p);
}

void Network::reroute() {
  std::vector<char> excluded(topology_.links.size());
  for (size_t l = 0; l < excluded.size(); ++l) excluded[l] = link_down_[l] || link_drained_[l];
  routing_ = Routing(topology_, wiring_, &excluded);
  ++counters_.reroutes;
}

// Frames on a wire that went down while they crossed it, or lost to the link's loss rate.
bool Network::lost_on_arrival(const Port& port, const Packet& pkt) {
  if (pkt.lost) return true;
  return port.loss > 0 && pkt.kind != PacketKind::kPause && pkt.kind != PacketKind::kResume &&
         rng_.uniform() < port.loss;
}

// ECMP over the next hops whose ports are up; -1 if none is.
int Network::live_hop(NodeIndex sw, std::span<const uint16_t> hops, uint64_t key) const {
  uint16_t live[64];
  size_t n = 0;
  for (uint16_t h : hops)
    if (ports_[wiring_.first_port[sw] + h].up && n < 64) live[n++] = h;
  if (n == 0) return -1;
  return n > 1 ? live[ecmp_pick(key, n)] : live[0];
}

}  // namespace xm::sim
