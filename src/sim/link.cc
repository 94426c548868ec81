// Ports and wires: serialisation, propagation, and PFC frames. See port.h.
#include "sim/network.h"

namespace xm::sim {

// Something new may be sent on `p`: send now if the wire is free, else make sure a
// transmit-done event will look again when it frees up.
void Network::kick(PortId p) {
  Port& port = ports_[p];
  if (port.tx_pending) return;
  if (port.busy_until <= now()) {
    transmit(p);
  } else {
    port.tx_pending = true;
    engine_.schedule(port.busy_until, target(kTxDone, p));
  }
}

// As kick, but never sends from inside the caller (used while another port is in the
// middle of sending, e.g. a dequeue that triggers a PFC RESUME).
void Network::kick_later(PortId p) {
  Port& port = ports_[p];
  if (port.tx_pending) return;
  port.tx_pending = true;
  engine_.schedule(max(now(), port.busy_until), target(kTxDone, p));
}

bool Network::has_more(const Port& port) const {
  if (port.backlog & ~(port.paused & ~1u)) return true;  // PFC frames, control, unpaused data
  return topology_.is_host(port.owner) && !port.active.empty();
}

// Precondition: the wire is free (busy_until <= now) and no transmit-done is pending.
void Network::transmit(PortId p) {
  Port& port = ports_[p];
  if (!port.up) {  // a dead link sends nothing: what is queued for it is lost
    if (port.backlog) link_down(p);
    return;
  }
  PacketId id = kNoPacket;
  if (port.backlog & kMacBit) {
    id = port.mac.pop_front(pool_);
    if (port.mac.empty()) port.backlog &= uint8_t(~kMacBit);
  } else {
    id = topology_.is_host(port.owner) ? host_dequeue(p) : switch_dequeue(p);
    if (id == kNoPacket) return;
  }
  const Packet& pkt = pool_[id];
  port.busy_until = now() + port.rate.tx_time(pkt.wire_bytes);
  port.tx_bytes += pkt.wire_bytes;
  if (pkt.kind == PacketKind::kData) port.tx_data_bytes += pkt.wire_bytes;
  const Time arrival = port.busy_until + port.delay;
  if (port.pipe.empty()) engine_.schedule(arrival, target(kArrival, p));
  else pool_[port.pipe.tail].next_at = arrival;  // the packet ahead knows when this one lands
  port.pipe.push_back(pool_, id);
  if (has_more(port)) {
    port.tx_pending = true;
    engine_.schedule(port.busy_until, target(kTxDone, p));
  }
}

// The packet at the head of p's wire reaches the peer.
void Network::arrive(PortId p) {
  Port& port = ports_[p];
  const Time next_at = pool_[port.pipe.head].next_at;
  const PacketId id = port.pipe.pop_front(pool_);
  if (!port.pipe.empty()) {
    engine_.schedule(next_at, target(kArrival, p));
    // The next packet on this wire is handled soon: start loading it now (it was last
    // touched a link delay ago and has likely left the cache).
    __builtin_prefetch(&pool_[port.pipe.head]);
  }
  if (faults_ && lost_on_arrival(port, pool_[id])) {
    ++counters_.lost_on_links;
    drop(id);
    return;
  }
  const PortId in = port.peer;  // the receiving node's port on this link
  if (topology_.is_host(port.peer_node)) host_receive(in, id);
  else switch_receive(in, id);
}

// A PFC frame arrived on port `at`'s link: it pauses or resumes `at`'s own sending.
void Network::handle_pfc(PortId at, const Packet& frame) {
  Port& port = ports_[at];
  const uint8_t bit = uint8_t(1u << frame.prio);
  if (frame.kind == PacketKind::kPause) {
    if (!(port.paused & bit)) {
      port.paused |= bit;
      port.paused_since[frame.prio] = now();
    }
  } else if (port.paused & bit) {
    port.paused &= uint8_t(~bit);
    port.paused_total += now() - port.paused_since[frame.prio];
    kick(at);
  }
}

void Network::send_pfc(PortId p, PacketKind kind, int cls) {
  const PacketId id = pool_.alloc();
  Packet& frame = pool_[id];
  frame = Packet{};
  frame.kind = kind;
  frame.prio = uint8_t(cls);
  frame.wire_bytes = config_.pfc_frame_bytes + config_.wire_gap_bytes;
  ports_[p].mac.push_back(pool_, id);
  ports_[p].backlog |= kMacBit;
  if (kind == PacketKind::kPause) ++counters_.pause_frames;
  else ++counters_.resume_frames;
  kick_later(p);
}

}  // namespace xm::sim
