// RoCEv2 NICs: the sender's scheduler (rate pacing, windows, go-back-N) and the
// receiver (in-order delivery, ACK coalescing, NACKs, CNPs).
#include "sim/network.h"

#include <algorithm>

namespace xm::sim {

void Network::host_receive(PortId in, PacketId id) {
  const Packet& pkt = pool_[id];
  switch (pkt.kind) {
    case PacketKind::kPause:
    case PacketKind::kResume:
      handle_pfc(in, pkt);
      pool_.free(id);
      return;
    case PacketKind::kData:
      receive_data(in, id);
      return;
    case PacketKind::kAck:
    case PacketKind::kNack:
      receive_ack(id);
      return;
  }
}

// A flow with bytes to send that nothing holds back: not its connection's order, PFC or
// its window (pacing and tokens are the arbiters' business).
inline bool Network::may_send(const Port& port, const Flow& f) const {
  if (f.snd_nxt >= f.size) return false;
  if (f.follows != UINT32_MAX && flows_[f.follows].snd_nxt < flows_[f.follows].size) return false;  // in order
  if (port.paused & (1u << f.cls)) return false;
  return f.window == 0 || f.snd_nxt - f.snd_una < f.window;
}

// The wire is free: ACKs and NACKs first, then one data packet from the next flow (round
// robin) that is not paused, not window-bound and whose pacing allows it. If flows wait
// only for pacing, a wake-up is set for the earliest.
PacketId Network::host_dequeue(PortId p) {
  Port& port = ports_[p];
  // ACKs in their flow's class wait while the peer pauses it, unless the NIC sends them
  // regardless (nic_ack_high_prio).
  if ((port.backlog & 1u) &&
      (config_.nic_ack_high_prio || !(port.paused & (1u << pool_[port.queue[0].head].prio)))) {
    const PacketId id = port.queue[0].pop_front(pool_);
    if (port.queue[0].empty()) port.backlog &= uint8_t(~1u);
    return id;
  }
  if (config_.nic_arbitration == NicArbitration::kTokenRounds) return token_round_dequeue(p);
  const uint32_t n = uint32_t(port.active.size());
  Time earliest = Time::infinite();
  uint32_t i = port.rr;
  for (uint32_t k = 0; k < n; ++k, ++i) {
    if (i >= n) i = 0;
    const uint32_t id = port.active[i];
    Flow& f = flows_[id];
    if (!may_send(port, f)) continue;
    if (f.next_avail > now()) {
      earliest = min(earliest, f.next_avail);
      continue;
    }
    port.rr = i + 1 >= n ? 0 : i + 1;
    return make_data(f, id);
  }
  if (earliest != Time::infinite()) schedule_wake(p, earliest);
  return kNoPacket;
}

// The HPCC simulator's NIC (SimAI's fork): each flow earns tokens at its rate, up to two
// rounds. The flow served last goes on while it holds tokens for a packet like its last;
// otherwise the next in round robin that holds a whole round starts a turn. Flows thus
// leave in bursts of a round or more, where per-packet pacing spaces every packet.
// Tokens are refilled only when below the cap, and the refill's clock is moved only then,
// as there: a flow idle at the cap gets its next refill from that older time.
PacketId Network::token_round_dequeue(PortId p) {
  Port& port = ports_[p];
  const uint32_t n = uint32_t(port.active.size());
  const int64_t round = config_.token_round_bytes;
  if (port.rr < n) {
    Flow& f = flows_[port.active[port.rr]];
    if (may_send(port, f) && f.tokens >= int64_t(f.last_wire)) return send_tokens(f, port.active[port.rr]);
  }
  for (uint32_t k = 1; k <= n; ++k) {
    const uint32_t i = (port.rr + k) % n;
    Flow& f = flows_[port.active[i]];
    if (!may_send(port, f)) continue;
    if (f.tokens < token_cap_) {
      const double earned = double((now() - f.token_at).ps()) * f.rate.bps() / 8e12;
      f.tokens = std::min<int64_t>(token_cap_, f.tokens + std::llround(earned));
      f.token_at = now();
    }
    if (f.tokens >= round) {
      port.rr = i;
      return send_tokens(f, port.active[i]);
    }
  }
  // Nothing can go: the NIC sets one wake-up for when the first of its flows would hold a
  // round, as there — counting every flow it holds, also those its window or PFC holds
  // back, with the tokens they had when last served. One that already holds a round
  // means no wake-up at all, and a wake-up already set is not brought forward: a flow
  // then waits for the next ACK to this NIC (HPCC's short flows behind a window-bound
  // one wait up to an RTT so).
  Time earliest = Time::infinite();
  for (uint32_t id : port.active) {
    const Flow& f = flows_[id];
    if (f.tokens > round) return kNoPacket;
    earliest = min(earliest, now() + max(f.rate.tx_time(uint64_t(round - f.tokens)), Time::ns(1)));
  }
  const bool wake_pending = port.wake_at != Time::infinite() && port.wake_at > now();
  if (earliest != Time::infinite() && !wake_pending) schedule_wake(p, earliest);
  return kNoPacket;
}

PacketId Network::send_tokens(Flow& f, uint32_t flow_id) {
  const PacketId id = make_data(f, flow_id);
  f.tokens -= int64_t(pool_[id].wire_bytes);  // may go below zero
  return id;
}

void Network::schedule_wake(PortId p, Time at) {
  Port& port = ports_[p];
  at = max(at, now());
  if (port.wake_at <= at && port.wake_at >= now()) return;  // an earlier wake-up is set
  port.wake_at = at;
  engine_.schedule(at, target(kWake, p));
}

PacketId Network::make_data(Flow& f, uint32_t flow_id) {
  const uint32_t payload = uint32_t(std::min<uint64_t>(config_.mtu_payload, f.size - f.snd_nxt));
  const PacketId id = pool_.alloc();
  Packet& pkt = pool_[id];
  pkt = Packet{};
  pkt.kind = PacketKind::kData;
  pkt.seq = f.snd_nxt;
  pkt.flow = flow_id;
  pkt.dst = f.dst;
  pkt.payload = payload;
  pkt.wire_bytes = payload + data_overhead_;
  pkt.hash = f.hash_fwd;
  pkt.prio = f.cls;
  if (f.snd_nxt < f.snd_max) {
    const uint64_t again = std::min<uint64_t>(payload, f.snd_max - f.snd_nxt);
    f.retransmitted_bytes += again;
    counters_.retransmitted_bytes += again;
  }
  f.snd_nxt += payload;
  f.snd_max = std::max(f.snd_max, f.snd_nxt);
  f.last_sent = now();
  f.last_wire = pkt.wire_bytes;
  f.next_avail = now() + f.rate.tx_time(pkt.wire_bytes);
  ++counters_.data_packets_sent;
  counters_.data_wire_bytes_sent += pkt.wire_bytes;
  counters_.payload_bytes_sent += payload;
  return id;
}

void Network::receive_data(PortId in, PacketId id) {
  Packet& pkt = pool_[id];
  Flow& f = flows_[pkt.flow];
  ++counters_.data_packets_delivered;
  counters_.data_wire_bytes_delivered += pkt.wire_bytes;
  const uint64_t long_flow = uint64_t(host_rate(f.dst).bytes_in(base_rtt_));
  if (!f.rx_seen) {
    f.rx_seen = true;
    if (f.size - pkt.seq > long_flow) ++fan_in_[f.dst], f.in_fan_in = true;
  }
  PacketKind reply = PacketKind::kData;  // kData: no reply
  if (pkt.seq == f.rcv_nxt && !f.received) {
    f.rcv_nxt += pkt.payload;
    ++f.unacked_packets;
    if (ooo_receiver_) absorb_out_of_order(f);
    if (f.in_fan_in && f.size - f.rcv_nxt <= long_flow) --fan_in_[f.dst], f.in_fan_in = false;
    if (f.rcv_nxt >= f.size) {
      flow_received(pkt.flow);
      reply = PacketKind::kAck;
    } else if (f.unacked_packets >= config_.ack_every) {
      reply = PacketKind::kAck;
    }
  } else if (pkt.seq > f.rcv_nxt) {
    if (ooo_receiver_ && accept_out_of_order(f, pkt)) {
      reply = PacketKind::kAck;  // keep the sender's clock running; the ACK is cumulative
    } else if (now() >= f.nack_until || f.last_nack != f.rcv_nxt) {
      // A gap: something was lost. Ask to go back, once per expected sequence and interval.
      f.nack_until = now() + config_.nack_interval;
      f.last_nack = f.rcv_nxt;
      reply = PacketKind::kNack;
    }
  } else {
    reply = PacketKind::kAck;  // a duplicate: say again where we are
  }
  bool cnp = false;
  if (pkt.ecn_ce && needs_.ecn && now() - f.last_cnp >= config_.cnp_interval) {
    cnp = true;
    f.last_cnp = now();
    ++counters_.cnps;
    if (reply == PacketKind::kData) reply = PacketKind::kAck;
  }
  if (reply == PacketKind::kData) {
    pool_.free(id);
    return;
  }
  // The data packet becomes its ACK in place: no allocation, and its INT records (which
  // the ACK echoes) stay where they are.
  const Packet data = pool_[id];
  Packet& ack = pool_[id];
  ack = Packet{};
  ack.kind = reply;
  ack.seq = f.rcv_nxt;
  ack.flow = data.flow;
  ack.dst = f.src;
  ack.hash = f.hash_rev;
  ack.prio = config_.ack_high_prio ? 0 : f.cls;
  ack.wire_bytes = ack_wire_;
  ack.cnp = cnp;
  ack.hops = needs_.int_hops ? data.hops : 0;
  ack.path_util = data.path_util;
  cc_.on_receive(*this, data.flow, data, ack);
  f.unacked_packets = 0;
  if (reply == PacketKind::kAck) ++counters_.acks;
  else ++counters_.nacks;
  // The ACK leaves on the port the data came in on (a host's ports are equivalent).
  ports_[in].queue[0].push_back(pool_, id);
  ports_[in].backlog |= 1u;
  kick(in);
}

// Spraying reorders packets. Such a receiver remembers packets that arrive ahead of the
// next expected one (within a window of kOooWindow packets; further ahead is a loss, and
// gets a NACK) and moves past them once the gap fills. Packets are MTU-sized except a
// message's last, so a packet's index is seq / mtu.
bool Network::accept_out_of_order(Flow& f, const Packet& pkt) {
  const uint64_t mtu = config_.mtu_payload;
  const uint64_t next = f.rcv_nxt / mtu, index = pkt.seq / mtu;
  if (index - next >= kOooWindow) return false;
  std::vector<uint8_t>& seen = ooo_[pkt.flow];
  if (seen.size() < kOooWindow) seen.assign(kOooWindow, 0);
  seen[index % kOooWindow] = 1;
  return true;
}

void Network::absorb_out_of_order(Flow& f) {
  auto it = ooo_.find(uint32_t(&f - flows_.data()));
  if (it == ooo_.end()) return;
  const uint64_t mtu = config_.mtu_payload;
  std::vector<uint8_t>& seen = it->second;
  seen[(f.rcv_nxt / mtu + kOooWindow - 1) % kOooWindow] = 0;  // the slot just consumed in order
  while (f.rcv_nxt < f.size && seen[(f.rcv_nxt / mtu) % kOooWindow]) {
    seen[(f.rcv_nxt / mtu) % kOooWindow] = 0;
    f.rcv_nxt = std::min(f.size, f.rcv_nxt + mtu);
  }
}

void Network::receive_ack(PacketId id) {
  const Packet& ack = pool_[id];
  const uint32_t fid = ack.flow;
  Flow& f = flows_[fid];
  if (f.state != FlowState::kActive) {
    pool_.free(id);
    return;
  }
  if (ack.seq > f.snd_una) {
    f.snd_una = std::min(ack.seq, f.size);
    f.last_progress = now();
  }
  if (ack.kind == PacketKind::kNack) f.snd_nxt = f.snd_una;  // go-back-N
  if (f.snd_nxt < f.snd_una) f.snd_nxt = f.snd_una;
  if (f.snd_una >= f.size) {
    finish_flow(fid);
  } else {
    cc_.on_ack(*this, fid, ack, pool_.int_stack(id).hop);
    kick(f.port);
  }
  pool_.free(id);
}

}  // namespace xm::sim
