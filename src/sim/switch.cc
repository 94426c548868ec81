// Switches: ECMP forwarding, shared-buffer admission, PFC, and what egress does to a
// departing packet (ECN marking, INT, TiTa's utilisation field).
#include "sim/ecmp.h"
#include "sim/network.h"

#include <bit>

namespace xm::sim {

void Network::switch_receive(PortId in, PacketId id) {
  Packet& pkt = pool_[id];
  if (pkt.kind == PacketKind::kPause || pkt.kind == PacketKind::kResume) {
    handle_pfc(in, pkt);
    pool_.free(id);
    return;
  }
  const NodeIndex sw = ports_[in].owner;
  const uint32_t s = sw - topology_.hosts;
  // ECMP: the flow's hash mixed with this switch's seed, so consecutive switches do not
  // make correlated choices. Spraying varies the hash per packet.
  const auto hops = routing_.next_hops(sw, pkt.dst);
  auto key = [&] {
    uint64_t k = pkt.hash ^ switch_seed_[s];
    if (config_.load_balancing == LoadBalancing::kSpray) k ^= pkt.seq * 0x9e3779b97f4a7c15ull;
    return k;
  };
  int hop = 0;
  if (faults_) hop = live_hop(sw, hops, key());  // only live ports (faults.cc)
  else hop = hops.size() > 1 ? hops[ecmp_pick(key(), hops.size())] : hops[0];
  if (hop < 0) {  // no live route to its destination (until routes follow a dead link)
    drop(id);
    return;
  }
  const uint16_t out_local = uint16_t(hop);
  const PortId out = wiring_.first_port[sw] + out_local;
  const uint32_t in_local = in - wiring_.first_port[sw];
  const int cls = pkt.prio;
  SharedBuffer& buffer = buffers_[s];
  Port& egress = ports_[out];
  const uint64_t queued = buffer.egress_bytes(out_local, cls);  // what the packet finds
  const SharedBuffer::Admit admit = buffer.arrive(in_local, out_local, cls, pkt.wire_bytes);
  if (admit == SharedBuffer::Admit::kDrop) {
    drop(id);
    return;
  }
  if (pkt.kind == PacketKind::kData) queue_hist_[egress.link_class].add(queued);
  pkt.in_port = uint16_t(in_local);
  egress.queue[cls].push_back(pool_, id);
  egress.backlog |= uint8_t(1u << cls);
  egress.queued_bytes += pkt.wire_bytes;
  if (admit == SharedBuffer::Admit::kAdmitAndPause) send_pfc(in, PacketKind::kPause, cls);
  kick(out);
}

void Network::drop(PacketId id) {
  const Packet& pkt = pool_[id];
  if (pkt.kind == PacketKind::kData) {
    ++counters_.data_packets_dropped;
    counters_.data_wire_bytes_dropped += pkt.wire_bytes;
  } else {
    ++counters_.control_packets_dropped;
  }
  pool_.free(id);
}

PacketId Network::switch_dequeue(PortId p) {
  Port& port = ports_[p];
  // Strict priority over the classes with packets that are not paused (class 0 never is).
  const uint32_t ready = port.backlog & ~(port.paused & ~1u) & ((1u << kClasses) - 1);
  if (ready == 0) return kNoPacket;
  const int cls = std::countr_zero(ready);
  const PacketId id = port.queue[cls].pop_front(pool_);
  if (port.queue[cls].empty()) port.backlog &= uint8_t(~(1u << cls));
  const Packet& head = pool_[id];
  const uint32_t in_port = head.in_port;
  port.queued_bytes -= head.wire_bytes;
  const NodeIndex sw = port.owner;
  SharedBuffer& buffer = buffers_[sw - topology_.hosts];
  if (buffer.depart(in_port, port.local, cls, head.wire_bytes))
    send_pfc(wiring_.first_port[sw] + in_port, PacketKind::kResume, cls);  // allocates: `head` is stale
  Packet& pkt = pool_[id];
  if (pkt.kind != PacketKind::kData) return id;

  if (needs_.ecn && config_.ecn && !pkt.ecn_ce) {
    // RED on this class's egress queue as the packet leaves (as the HPCC simulator does).
    const uint64_t q = buffer.egress_bytes(port.local, cls);
    bool mark = q >= port.ecn_kmax;
    if (!mark && q > port.ecn_kmin) {
      const double p_mark = port.ecn_pmax * double(q - port.ecn_kmin) /
                            double(port.ecn_kmax - port.ecn_kmin);
      mark = rng_.uniform() < p_mark;
    }
    if (mark) {
      pkt.ecn_ce = true;
      ++counters_.ecn_marks;
    }
  }
  if (needs_.int_hops && pkt.hops < kMaxIntHops) {
    IntHop& hop = pool_.int_stack(id).hop[pkt.hops++];
    hop.time_ns = uint32_t(now().ps() / 1000);
    hop.tx_bytes = uint32_t(port.tx_bytes);
    hop.qlen_bytes = uint32_t(port.queued_bytes);
    hop.rate_mbps = uint32_t(port.rate.bps() / 1e6);
  }
  if (needs_.path_util) {
    // TiTa: the port measures its own utilisation, txRate/B + queue/(B·T), as an EWMA
    // over the base RTT, and writes it into the packet if it is the largest so far.
    const Time dt = now() - port.util_at;
    if (dt > Time()) {
      const double T = double(base_rtt_.ps());
      const double tau = std::min(double(dt.ps()), T);
      const double bytes = double(port.tx_bytes - port.util_bytes);
      const double rate_u = bytes * 8e12 / (double(dt.ps()) * port.rate.bps());
      const double queue_u = double(port.queued_bytes) * 8e12 / (port.rate.bps() * T);
      port.util = port.util * (1 - tau / T) + (rate_u + queue_u) * (tau / T);
      port.util_at = now();
      port.util_bytes = port.tx_bytes;
    }
    if (port.util > pkt.path_util) pkt.path_util = float(port.util);
  }
  return id;
}

}  // namespace xm::sim
