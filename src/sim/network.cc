// Set-up, event dispatch and the life of a flow. See network.h.
#include "sim/network.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "sim/ecmp.h"

namespace xm::sim {

Network::Network(const SimTopology& topology, const NetConfig& config, CongestionControl& cc, uint64_t seed)
    : topology_(topology),
      config_(config),
      cc_(cc),
      needs_(cc.needs()),
      wiring_(wire(topology_)),
      routing_(topology_, wiring_),
      rng_(seed) {
  const uint32_t hosts = topology_.hosts;
  ports_.resize(wiring_.port_count());
  std::map<std::string, uint8_t> classes;
  for (PortId p = 0; p < ports_.size(); ++p) {
    Port& port = ports_[p];
    const SimLink& link = topology_.links[wiring_.link[p]];
    port.owner = wiring_.owner[p];
    port.peer_node = wiring_.peer_node[p];
    port.peer = wiring_.peer_port[p];
    port.local = uint16_t(p - wiring_.first_port[port.owner]);
    port.rate = link.rate;
    port.delay = link.delay;
    const double scale = link.rate.gbps() / 25.0;
    port.ecn_kmin = uint32_t(config_.ecn_thresholds.kmin_kb_per_25g * 1000 * scale);
    port.ecn_kmax = uint32_t(config_.ecn_thresholds.kmax_kb_per_25g * 1000 * scale);
    port.ecn_pmax = config_.ecn_thresholds.pmax;
    if (const EcnAtRate* at = ecn_at_rate(config_.ecn_thresholds, link.rate)) {
      port.ecn_kmin = uint32_t(at->kmin_kb * 1000);
      port.ecn_kmax = uint32_t(at->kmax_kb * 1000);
      port.ecn_pmax = at->pmax;
    }
    std::string cls = std::string(to_string(topology_.tier[port.owner])) + "->" +
                      to_string(topology_.tier[port.peer_node]);
    auto [it, added] = classes.emplace(cls, uint8_t(classes.size()));
    if (added) link_classes_.push_back(cls);
    port.link_class = it->second;
  }
  queue_hist_.resize(link_classes_.size());

  // Switch buffers. Thresholds scale with port speed relative to the hosts' (HPCC rule).
  Rate host = Rate::bps(0);
  for (uint32_t h = 0; h < hosts; ++h) host = max(host, ports_[wiring_.first_port[h]].rate);
  BufferConfig buffer;
  buffer.buffer_bytes = uint64_t((config_.buffer_mb > 0 ? config_.buffer_mb : 16.0 * host.gbps() / 50.0) * 1024 * 1024);
  buffer.reserve_bytes = config_.reserve_bytes;
  buffer.resume_offset_bytes = config_.resume_offset_bytes;
  buffer.pfc = config_.pfc;
  buffer.egress_shift = config_.egress_shift;
  buffers_.resize(topology_.switch_count());
  switch_seed_.resize(topology_.switch_count());
  for (NodeIndex s = hosts; s < topology_.node_count(); ++s) {
    std::vector<uint32_t> headroom, shift;
    for (PortId p = wiring_.first_port[s]; p < wiring_.first_port[s + 1]; ++p) {
      const Port& port = ports_[p];
      headroom.push_back(uint32_t(config_.headroom_rtts * port.rate.bytes_in(port.delay) +
                                  config_.headroom_packets * config_.mtu_payload));
      uint32_t sh = config_.pfc_shift;
      for (double r = host.bps(); r < port.rate.bps() && sh > 0; r *= 2) --sh;
      shift.push_back(sh);
    }
    buffers_[s - hosts].configure(buffer, headroom, shift);
    switch_seed_[s - hosts] = switch_seed(seed, s);
  }

  fan_in_.assign(hosts, 0);
  ooo_receiver_ = config_.ooo_receiver || config_.load_balancing == LoadBalancing::kSpray;
  next_sport_.assign(hosts, 10000);
  const uint32_t int_bytes = needs_.int_hops ? config_.int_base_bytes + 8 * kMaxIntHops : needs_.path_util ? 8 : 0;
  data_overhead_ = config_.header_bytes + config_.wire_gap_bytes + int_bytes;
  ack_wire_ = config_.ack_frame_bytes + config_.wire_gap_bytes + int_bytes;
  token_cap_ = 2 * std::max<int64_t>(int64_t(config_.mtu_payload) + data_overhead_, config_.token_round_bytes);

  // HPCC's T: the largest idle RTT of a full packet and its ACK. Sampled from the first
  // host under each distinct first switch (all hosts of a ToR see the same distances).
  std::vector<char> seen(topology_.node_count(), 0);
  int sources = 0;
  for (uint32_t src = 0; src < hosts && sources < 64; ++src) {
    NodeIndex tor = wiring_.peer_node[wiring_.first_port[src]];
    if (seen[tor]) continue;
    seen[tor] = 1, ++sources;
    for (uint32_t dst = 0; dst < hosts; ++dst) {
      if (dst == src) continue;
      Time rtt;
      for (uint32_t l : routing_.path_links(src, dst)) {
        const SimLink& link = topology_.links[l];
        if (config_.model == NetModel::kHpcc)  // its maxRtt: the payload alone, no ACK
          rtt += link.rate.tx_time(config_.mtu_payload) + link.delay * 2;
        else
          rtt += link.rate.tx_time(config_.mtu_payload + data_overhead_) + link.rate.tx_time(ack_wire_) + link.delay * 2;
      }
      base_rtt_ = max(base_rtt_, rtt);
    }
  }
}

std::vector<FlowOutcome> Network::outcomes() const {
  std::vector<FlowOutcome> out(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) {
    const Flow& f = flows_[i];
    out[i] = {f.start, f.received_at, f.size, f.state != FlowState::kWaiting, f.received};
  }
  return out;
}

Result<uint32_t> Network::add_flow(const FlowSpec& spec) {
  const uint32_t id = uint32_t(flows_.size());
  if (ran_) return Error{"flows must be added before run()"};
  if (Status s = check_flow(spec, id, topology_.hosts); !s) return Error{s.message()};
  if (spec.cls < 1 || spec.cls >= kClasses) return Error{"flow " + std::to_string(id) + ": class must be 1..3"};
  if (id >= (1u << 28)) return Error{"too many flows (limit 2^28)"};
  Flow f;
  f.follows = spec.follows;
  f.src = spec.src, f.dst = spec.dst, f.size = spec.bytes, f.start = spec.start, f.cls = spec.cls;
  f.dport = spec.dport, f.group = spec.group;
  f.port = wiring_.first_port[f.src];  // a barrier's (it arrives once what it waits for has)
  if (spec.bytes > 0) {  // a barrier takes no source port, as in the flow engine
    f.sport = spec.sport ? spec.sport : next_sport_[spec.src]++;
    f.hash_fwd = flow_hash(f.src, f.dst, f.sport, f.dport);
    f.hash_rev = flow_hash(f.dst, f.src, f.dport, f.sport);
    if (wiring_.ports_of(f.src) > 1) {  // a dual-homed NIC, or one with a port into its server's intra fabric
      const std::vector<PortId> ports = routing_.host_ports(f.src, f.dst);
      f.port = ports[f.hash_fwd % ports.size()];
    }
    f.max_rate = f.rate = ports_[f.port].rate;
    f.ideal = ideal_fct(f);
  }
  f.pending_deps = uint32_t(spec.after.size());
  flows_.push_back(f);
  dependents_.emplace_back();
  for (uint32_t d : spec.after) dependents_[d].push_back(id);
  return id;
}

// The flow alone on an idle network, exactly: a store-and-forward pipeline of n packets
// (all full but the last) along one shortest path, then the last ACK back. For equal
// packets, packet k leaves hop j at  sum_{m<=j}(s/r_m + d_m) - d_j + (k-1)·max_{m<=j} s/r_m;
// the last packet waits for its predecessor at every hop.
// The packets carry no INT: every algorithm is measured against the same ideal, and pays
// for its own telemetry bytes (as the HPCC simulator's standalone FCT does).
Time Network::ideal_fct(const Flow& f) const {
  const std::vector<uint32_t> path = routing_.path_links(f.src, f.dst);
  if (config_.model == NetModel::kHpcc) return hpcc_standalone_fct(f, path);
  const uint64_t mtu = config_.mtu_payload;
  const uint64_t packets = (f.size + mtu - 1) / mtu;
  const uint32_t overhead = config_.header_bytes + config_.wire_gap_bytes;
  const uint32_t ack = config_.ack_frame_bytes + config_.wire_gap_bytes;
  const uint32_t full = uint32_t(mtu) + overhead;
  const uint32_t last = uint32_t(f.size - (packets - 1) * mtu) + overhead;
  Time first_done, slowest, last_done, back;  // first_done: packet 1 leaves hop j
  for (size_t j = 0; j < path.size(); ++j) {
    const SimLink& link = topology_.links[path[j]];
    const Time arrive_prev = j == 0 ? Time() : first_done + topology_.links[path[j - 1]].delay;
    first_done = arrive_prev + link.rate.tx_time(full);
    slowest = max(slowest, link.rate.tx_time(full));
    const Time before_last = first_done + slowest * int64_t(packets >= 2 ? packets - 2 : 0);  // packet n-1
    const Time last_arrives = j == 0 ? (packets >= 2 ? before_last : Time()) : last_done + topology_.links[path[j - 1]].delay;
    last_done = (packets >= 2 ? max(last_arrives, before_last) : last_arrives) + link.rate.tx_time(last);
    back += link.delay + link.rate.tx_time(ack);
  }
  return last_done + topology_.links[path.back()].delay + back;
}

// The HPCC simulator's standalone FCT, as its driver writes it: the pair's base RTT
// (both ways' link delays and one payload's serialisation per hop, no headers, no ACK)
// plus every byte with its headers (INT left out) at the path's slowest rate. It is below
// what a lone flow takes (the headers of the first packet and the ACK's way back are
// missing), so slowdowns under 1 occur and are reported as they are.
Time Network::hpcc_standalone_fct(const Flow& f, const std::vector<uint32_t>& path) const {
  const uint64_t mtu = config_.mtu_payload;
  const uint64_t packets = (f.size + mtu - 1) / mtu;
  Time rtt;
  Rate slowest = topology_.links[path.front()].rate;
  for (uint32_t l : path) {
    const SimLink& link = topology_.links[l];
    rtt += link.delay * 2 + link.rate.tx_time(uint32_t(mtu));
    slowest = min(slowest, link.rate);
  }
  return rtt + slowest.tx_time(f.size + packets * config_.header_bytes);
}

bool Network::run(Time stop, const std::function<void(const Network&)>& progress) {
  if (!ran_) {
    ran_ = true;
    cc_due_.assign(flows_.size() * kCcTimers, Time::infinite());
    for (uint32_t i = 0; i < flows_.size(); ++i)
      if (flows_[i].pending_deps == 0) arrivals_.push_back(i);
    std::stable_sort(arrivals_.begin(), arrivals_.end(),
                     [&](uint32_t a, uint32_t b) { return flows_[a].start < flows_[b].start; });
    if (!arrivals_.empty()) {
      engine_.schedule(max(engine_.now(), flows_[arrivals_[0]].start), target(kFlowArrivals, 0));
      window_end_ = flows_[arrivals_.back()].start;
      engine_.schedule(window_end_, target(kSnapshot, 0));
    }
    pool_.reserve(1 << 16);
    if (!link_events_.empty()) engine_.schedule(max(engine_.now(), link_events_[0].at), target(kLinkEvent, 0));
  }
  while (counters_.flows_done < flows_.size()) {
    const Engine::Stopped why = engine_.run(stop, 1u << 20, [this](uint32_t t) { dispatch(t); });
    if (progress) progress(*this);
    if (why != Engine::Stopped::kSlice) break;
  }
  return counters_.flows_done == flows_.size();
}

InFlightData Network::in_flight_data() const {
  InFlightData d;
  auto count = [&](PacketId id) {
    const Packet& pkt = pool_[id];
    if (pkt.kind != PacketKind::kData) return;
    ++d.packets;
    d.wire_bytes += pkt.wire_bytes;
  };
  auto walk = [&](const PacketList& list) {
    for (PacketId id = list.head; id != kNoPacket; id = pool_[id].next) count(id);
  };
  for (const Port& port : ports_) {
    for (const PacketList& q : port.queue) walk(q);
    walk(port.pipe);
  }
  return d;
}

Time Network::paused_time(size_t p) const {
  const Port& port = ports_[p];
  Time t = port.paused_total;
  for (int c = 0; c < kClasses; ++c)
    if (port.paused & (1u << c)) t += now() - port.paused_since[c];
  return t;
}

void Network::dispatch(uint32_t t) {
  const uint32_t index = t & 0x0fffffffu;
  switch (t >> 28) {
    case kTxDone:
      ports_[index].tx_pending = false;
      transmit(index);
      return;
    case kArrival:
      arrive(index);
      return;
    case kWake:
      if (ports_[index].wake_at == now()) {
        ports_[index].wake_at = Time::infinite();
        kick(index);
      }
      return;
    case kFlowArrivals:
      start_due_flows();
      return;
    case kRto:
      scan_timeouts();
      return;
    case kSnapshot:
      for (Port& port : ports_) port.window_tx_bytes = port.tx_bytes;
      return;
    case kLinkEvent:
      apply_link_event(link_events_[index]);
      if (++next_link_event_ < link_events_.size())
        engine_.schedule(link_events_[next_link_event_].at, target(kLinkEvent, uint32_t(next_link_event_)));
      return;
    case kReroute:
      reroute();
      return;
    default: {
      const uint8_t timer = uint8_t((t >> 28) - kCcTimer);
      Time& due = cc_due_[size_t(index) * kCcTimers + timer];
      if (due != now()) return;  // replaced or cancelled since
      due = Time::infinite();
      if (flows_[index].state == FlowState::kActive) cc_.on_timer(*this, index, timer);
    }
  }
}

void Network::start_due_flows() {
  while (next_arrival_ < arrivals_.size() && flows_[arrivals_[next_arrival_]].start <= now())
    start_flow(arrivals_[next_arrival_++]);
  if (next_arrival_ < arrivals_.size())
    engine_.schedule(flows_[arrivals_[next_arrival_]].start, target(kFlowArrivals, 0));
}

void Network::start_flow(uint32_t id) {
  Flow& f = flows_[id];
  if (f.size == 0) {  // a barrier passes at once
    f.state = FlowState::kDone;
    f.finish = now();
    flow_received(id);
    if (++counters_.flows_done == flows_.size()) engine_.request_stop();
    return;
  }
  f.state = FlowState::kActive;
  f.rate = f.max_rate;
  f.window = 0;
  f.next_avail = f.last_progress = now();
  if (config_.nic_arbitration == NicArbitration::kTokenRounds) {
    f.tokens = int64_t(config_.mtu_payload) + data_overhead_;  // one full packet to start
    f.token_at = now();
    f.last_wire = 0;  // no packet yet: if it is the flow served last, it may send at once
  }
  ++counters_.flows_started;
  cc_.on_start(*this, id);
  ports_[f.port].active.push_back(id);
  if (!rto_scan_scheduled_) {
    rto_scan_scheduled_ = true;
    engine_.schedule(now() + config_.rto / 4, target(kRto, 0));
  }
  kick(f.port);
}

void Network::finish_flow(uint32_t id) {
  Flow& f = flows_[id];
  f.state = FlowState::kDone;
  f.finish = now();
  Port& port = ports_[f.port];
  auto it = std::find(port.active.begin(), port.active.end(), id);
  if (it != port.active.end()) {
    if (config_.nic_arbitration == NicArbitration::kTokenRounds) {
      // Its round robin keeps the order and the flow served last (port.rr) in place.
      if (uint32_t(it - port.active.begin()) < port.rr) --port.rr;
      port.active.erase(it);
    } else {
      *it = port.active.back();
      port.active.pop_back();
    }
    if (port.rr >= port.active.size()) port.rr = 0;
  }
  // The HPCC simulator's NIC does not look again when a flow completes; with its wake-up
  // rules (token_round_dequeue) a flow left waiting could then wait for ever. Ours looks.
  if (config_.nic_arbitration == NicArbitration::kTokenRounds && !port.active.empty()) kick_later(f.port);
  for (uint8_t t = 0; t < kCcTimers; ++t) cc_due_[size_t(id) * kCcTimers + t] = Time::infinite();
  cc_.on_finish(*this, id);
  if (++counters_.flows_done == flows_.size()) engine_.request_stop();
}

void Network::flow_received(uint32_t id) {
  Flow& f = flows_[id];
  f.received = true;
  f.received_at = now();
  if (ooo_receiver_) ooo_.erase(id);
  if (f.in_fan_in) --fan_in_[f.dst], f.in_fan_in = false;
  for (uint32_t d : dependents_[id]) {
    if (--flows_[d].pending_deps == 0) {
      flows_[d].start = now();
      start_flow(d);
    }
  }
}

// The retransmission timer, for every flow at once: a scan every quarter RTO (one event,
// not one per flow) finds flows with unacknowledged data and no progress for an RTO, and
// sends them back to their first unacknowledged byte.
void Network::scan_timeouts() {
  rto_scan_scheduled_ = false;
  for (uint32_t h = 0; h < topology_.hosts; ++h)
    for (PortId p = wiring_.first_port[h]; p < wiring_.first_port[h + 1]; ++p)
      for (uint32_t id : ports_[p].active) {
        Flow& f = flows_[id];
        if (now() - f.last_progress >= config_.rto && f.snd_nxt > f.snd_una) {
          ++counters_.timeouts;
          f.snd_nxt = f.snd_una;
          f.last_progress = now();
          kick(p);
        }
      }
  if (counters_.flows_done < counters_.flows_started) {
    rto_scan_scheduled_ = true;
    engine_.schedule(now() + config_.rto / 4, target(kRto, 0));
  }
}

void Network::set_rate(uint32_t id, Rate rate) {
  Flow& f = flows_[id];
  rate = min(rate, f.max_rate);
  if (!(rate.bps() > 0)) rate = Rate::mbps(1);
  if (config_.nic_arbitration == NicArbitration::kTokenRounds) {
    // Its NIC looks again whenever a flow's rate changes (tokens come at the new rate).
    const bool changed = rate != f.rate;
    f.rate = rate;
    if (changed && f.state == FlowState::kActive) kick_later(f.port);
    return;
  }
  f.rate = rate;
  if (f.last_wire > 0) {
    f.next_avail = f.last_sent + rate.tx_time(f.last_wire);
    if (f.state == FlowState::kActive && f.snd_nxt < f.size) schedule_wake(f.port, f.next_avail);
  }
}

void Network::set_timer(uint32_t id, uint8_t timer, Time at) {
  cc_due_[size_t(id) * kCcTimers + timer] = at;
  engine_.schedule(at, target(kCcTimer + timer, id));
}

void Network::cancel_timer(uint32_t id, uint8_t timer) {
  cc_due_[size_t(id) * kCcTimers + timer] = Time::infinite();
}

uint64_t Network::base_bdp(uint32_t id) const {
  return uint64_t(flows_[id].max_rate.bytes_in(base_rtt_));
}

}  // namespace xm::sim
