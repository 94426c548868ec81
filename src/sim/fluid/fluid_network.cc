#include "sim/fluid/fluid_network.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "sim/ecmp.h"

namespace xm::sim {

FluidNetwork::FluidNetwork(const SimTopology& topology, const NetConfig& config, uint64_t seed)
    : topology_(topology), config_(config), wiring_(wire(topology)), routing_(topology, wiring_) {
  for (NodeIndex s = topology.hosts; s < topology.node_count(); ++s) seeds_.push_back(switch_seed(seed, s));
  next_sport_.assign(topology.hosts, 10000);
  capacity_.resize(wiring_.port_count());
  for (PortId p = 0; p < wiring_.port_count(); ++p)
    capacity_[p] = topology.links[wiring_.link[p]].rate.bps() / 8 / 1e12;
  port_entries_.resize(wiring_.port_count());
  ack_load_.assign(wiring_.port_count(), 0);
  port_index_.assign(wiring_.port_count(), kUnmarked);
}

void FluidNetwork::reserve(size_t flows) {
  flows_.reserve(flows);
  after_.reserve(flows);
  entries_.reserve(flows * 8);
  entry_flow_.reserve(flows * 8);
}

Result<uint32_t> FluidNetwork::add_flow(const FlowSpec& spec) {
  const uint32_t id = uint32_t(flows_.size());
  if (Status s = check_flow(spec, id, topology_.hosts); !s) return Error{s.message()};
  if (spec.follows != UINT32_MAX) flows_[spec.follows].follower = id;
  FluidFlow f;
  f.bytes = spec.bytes, f.remaining = double(spec.bytes), f.start = spec.start, f.follows = spec.follows;
  f.pending = uint32_t(spec.after.size());
  f.entries = f.acks = f.entries_end = uint32_t(entries_.size());
  after_.push_back(spec.after);
  if (spec.bytes == 0) {  // a barrier: no link, it arrives when what it waits for has
    flows_.push_back(f);
    return id;
  }
  const uint16_t sport = spec.sport ? spec.sport : next_sport_[spec.src]++;
  // A connection's messages share its paths: found once per 5-tuple.
  auto [known, added] = paths_.try_emplace(Tuple{spec.src, spec.dst, sport, spec.dport});
  if (added) {
    const uint32_t fwd = flow_hash(spec.src, spec.dst, sport, spec.dport), rev = flow_hash(spec.dst, spec.src, spec.dport, sport);
    const std::vector<PortId> first = routing_.host_ports(spec.src, spec.dst);
    known->second.data = ecmp_path(wiring_, routing_, topology_.hosts, first[fwd % first.size()], spec.dst, fwd, seeds_);
    // ACKs leave the receiver on the port the data came in on.
    known->second.acks = ecmp_path(wiring_, routing_, topology_.hosts, wiring_.peer_port[known->second.data.back()],
                                   spec.src, rev, seeds_);
  }
  const std::vector<PortId>& data = known->second.data;
  const std::vector<PortId>& acks = known->second.acks;

  // Wire bytes per payload byte: every packet's headers and gap forward, an ACK per
  // `ack_every` packets back.
  const uint64_t mtu = config_.mtu_payload, packets = (spec.bytes + mtu - 1) / mtu;
  const double overhead = config_.header_bytes + config_.wire_gap_bytes;
  const double data_weight = (double(spec.bytes) + double(packets) * overhead) / double(spec.bytes);
  const double ack_weight = double((packets + config_.ack_every - 1) / config_.ack_every) *
                            double(config_.ack_frame_bytes + config_.wire_gap_bytes) / double(spec.bytes);
  const uint32_t packet = uint32_t(std::min<uint64_t>(mtu, spec.bytes) + uint64_t(overhead));
  Time slowest;
  for (PortId p : data) {
    entries_.push_back({p, float(data_weight), 0});
    entry_flow_.push_back(id);
    const SimLink& link = topology_.links[wiring_.link[p]];
    f.latency += link.delay + link.rate.tx_time(packet);
    slowest = max(slowest, link.rate.tx_time(packet));
  }
  f.latency -= slowest;  // the drain counts the slowest hop's serialization
  f.acks = uint32_t(entries_.size());
  f.alone_rate = 1e300;
  for (PortId p : data) f.alone_rate = std::min(f.alone_rate, capacity_[p] / data_weight);
  for (PortId p : acks) f.alone_rate = std::min(f.alone_rate, capacity_[p] / ack_weight);
  for (PortId p : acks) {
    entries_.push_back({p, float(ack_weight), 0});
    entry_flow_.push_back(id);
  }
  f.entries_end = uint32_t(entries_.size());
  flows_.push_back(f);
  return id;
}

bool FluidNetwork::follows_unsent(uint32_t id) const {
  const uint32_t before = flows_[id].follows;
  return before != UINT32_MAX && flows_[before].state < State::kDrained;
}

void FluidNetwork::mark(PortId p) {
  if (port_index_[p] == kUnmarked) port_index_[p] = uint32_t(dirty_.size()), dirty_.push_back(p);
}

void FluidNetwork::activate(uint32_t id) {
  FluidFlow& f = flows_[id];
  f.state = State::kActive;
  f.start = now_;
  f.last = now_.ps();
  for (uint32_t e = f.entries; e < f.acks; ++e) {
    std::vector<uint32_t>& list = port_entries_[entries_[e].port];
    entries_[e].slot = uint32_t(list.size());
    list.push_back(e);
    mark(entries_[e].port);
  }
}

void FluidNetwork::deactivate(uint32_t id) {
  FluidFlow& f = flows_[id];
  set_rate(id, 0);
  for (uint32_t e = f.entries; e < f.acks; ++e) {
    std::vector<uint32_t>& list = port_entries_[entries_[e].port];
    const uint32_t moved = list.back();
    list[entries_[e].slot] = moved;
    entries_[moved].slot = entries_[e].slot;
    list.pop_back();
    mark(entries_[e].port);
  }
}

// A flow's new rate, and what its ACKs now load.
void FluidNetwork::set_rate(uint32_t id, double rate) {
  FluidFlow& f = flows_[id];
  for (uint32_t e = f.acks; e < f.entries_end; ++e) {
    const PortId p = entries_[e].port;
    const double change = (rate - f.rate) * entries_[e].weight;
    ack_load_[p] = std::max(0.0, ack_load_[p] + change);
    // The flows on that port have a little more or less room: rate them again, unless
    // the change is too small to matter.
    if (std::abs(change) > 1e-3 * capacity_[p] && !port_entries_[p].empty()) ack_changed_.push_back(p);
  }
  f.rate = rate;
}

// Max-min fair rates for the flows connected to a changed port (through ports they
// share), by progressive filling: every unfrozen flow's rate rises alike until a port
// is full; that port's flows freeze there. A port's load is the sum over its flows of
// rate × the wire bytes each costs there.
void FluidNetwork::recompute() {
  ++counters_.recomputes;
  std::vector<PortId>& ports = dirty_;  // grows as the search finds more
  std::vector<uint32_t>& flows = scratch_.flows;
  flows.clear();
  for (size_t i = 0; i < ports.size(); ++i)
    for (uint32_t e : port_entries_[ports[i]]) {
      const uint32_t id = entry_flow_[e];
      if (flow_index_[id] != kUnmarked) continue;
      flow_index_[id] = uint32_t(flows.size());
      flows.push_back(id);
      for (uint32_t k = flows_[id].entries; k < flows_[id].acks; ++k) mark(entries_[k].port);
    }
  for (uint32_t id : flows) {  // bytes sent so far at the old rate
    FluidFlow& f = flows_[id];
    f.remaining = std::max(0.0, f.remaining - f.rate * double(now_.ps() - f.last));
    f.last = now_.ps();
  }
  std::vector<double>& left = scratch_.left;
  std::vector<double>& weight = scratch_.weight;
  std::vector<Candidate>& next = scratch_.heap;  // a min-heap by share
  left.assign(ports.size(), 0), weight.assign(ports.size(), 0);
  next.clear();
  auto push = [&](Candidate c) {
    next.push_back(c);
    std::push_heap(next.begin(), next.end(), std::greater<>());
  };
  for (uint32_t i = 0; i < ports.size(); ++i) {
    left[i] = std::max(capacity_[ports[i]] - ack_load_[ports[i]], 0.1 * capacity_[ports[i]]);
    for (uint32_t e : port_entries_[ports[i]]) weight[i] += entries_[e].weight;
    if (weight[i] > 0) push({left[i] / weight[i], i});
  }
  std::vector<double>& rate = scratch_.rate;
  rate.assign(flows.size(), -1);
  size_t frozen = 0;
  // Freezing flows at level L only raises the other ports' shares ((left - Lw)/(W - w) >=
  // left/W when L <= left/W), so a port's entry is refreshed lazily: when it comes out
  // below its current share it goes back in at that share.
  while (!next.empty() && frozen < flows.size()) {
    std::pop_heap(next.begin(), next.end(), std::greater<>());
    const auto [queued, i] = next.back();
    next.pop_back();
    if (weight[i] <= 1e-9) continue;  // all its flows are rated
    const double share = std::max(0.0, left[i] / weight[i]);
    if (share > queued * (1 + 1e-12) + 1e-300) {
      push({share, i});
      continue;
    }
    for (uint32_t e : port_entries_[ports[i]]) {
      const uint32_t k = flow_index_[entry_flow_[e]];
      if (rate[k] >= 0) continue;
      rate[k] = share, ++frozen;
      const FluidFlow& f = flows_[flows[k]];
      for (uint32_t x = f.entries; x < f.acks; ++x) {
        const uint32_t j = port_index_[entries_[x].port];
        left[j] -= share * entries_[x].weight;
        weight[j] -= entries_[x].weight;
      }
    }
  }
  for (uint32_t k = 0; k < flows.size(); ++k) {
    const uint32_t id = flows[k];
    FluidFlow& f = flows_[id];
    flow_index_[id] = kUnmarked;
    if (rate[k] <= 0 || rate[k] == f.rate) continue;
    set_rate(id, rate[k]);
    // A drain event goes in only when it is earlier than the one already queued; a later
    // one is pushed when that earlier one comes out (most rate changes push nothing).
    f.drain_at = now_.ps() + int64_t(std::ceil(f.remaining / f.rate));
    if (f.drain_at < f.queued_at) {
      f.queued_at = f.drain_at;
      events_.push({f.drain_at, id, Kind::kDrained});
    }
  }
  counters_.flows_rated += flows.size();
  last_rated_ = flows.size();
  for (PortId p : ports) port_index_[p] = kUnmarked;
  ports.clear();
}

void FluidNetwork::run(Time stop, const std::function<void(const FluidNetwork&)>& progress) {
  flow_index_.assign(flows_.size(), kUnmarked);
  // Who waits for whom, turned around: per flow, the flows waiting for it.
  dependents_begin_.assign(flows_.size() + 1, 0);
  for (const auto& after : after_)
    for (uint32_t d : after) ++dependents_begin_[d + 1];
  for (size_t i = 0; i < flows_.size(); ++i) dependents_begin_[i + 1] += dependents_begin_[i];
  dependents_.resize(dependents_begin_.back());
  std::vector<uint32_t> fill(dependents_begin_.begin(), dependents_begin_.end() - 1);
  for (uint32_t id = 0; id < after_.size(); ++id)
    for (uint32_t d : after_[id]) dependents_[fill[d]++] = id;
  after_.clear();
  after_.shrink_to_fit();
  for (uint32_t id = 0; id < flows_.size(); ++id)
    if (flows_[id].pending == 0) events_.push({flows_[id].start.ps(), id, Kind::kArrive});

  uint64_t reported = 0;
  while (!events_.empty() && events_.top().t <= stop.ps()) {
    if (progress && counters_.events - reported >= (1u << 20)) progress(*this), reported = counters_.events;
    now_ = Time::ps(events_.top().t);
    while (!events_.empty() && events_.top().t == now_.ps()) {
      const Event ev = events_.top();
      events_.pop();
      FluidFlow& f = flows_[ev.flow];
      switch (ev.kind) {
        case Kind::kArrive:
          ++counters_.events;
          if (f.bytes == 0) {  // a barrier passes at once
            f.start = now_, f.state = State::kDrained;
            events_.push({ev.t, ev.flow, Kind::kReceived});
            break;
          }
          if (follows_unsent(ev.flow)) {
            f.state = State::kQueued;  // its predecessor's drain activates it
            break;
          }
          activate(ev.flow);
          ++changes_;
          break;
        case Kind::kDrained:
          if (f.state != State::kActive || ev.t != f.queued_at) break;  // superseded by an earlier one
          f.queued_at = INT64_MAX;
          if (f.drain_at > ev.t) {  // its rate fell since: not yet
            f.queued_at = f.drain_at;
            events_.push({f.drain_at, ev.flow, Kind::kDrained});
            break;
          }
          ++counters_.events;
          f.remaining = 0;
          f.state = State::kDrained;
          deactivate(ev.flow);
          ++changes_;
          if (f.follower != UINT32_MAX && flows_[f.follower].state == State::kQueued) {
            activate(f.follower);
            ++changes_;
          }
          events_.push({ev.t + f.latency.ps(), ev.flow, Kind::kReceived});
          break;
        case Kind::kRecompute:  // the deferred computation is due (after this batch)
          wake_pending_ = false;
          break;
        case Kind::kReceived:
          ++counters_.events;
          f.state = State::kReceived;
          f.received_at = Time::ps(ev.t);
          ++counters_.flows_done;
          for (uint32_t k = dependents_begin_[ev.flow]; k < dependents_begin_[ev.flow + 1]; ++k)
            if (--flows_[dependents_[k]].pending == 0) events_.push({ev.t, dependents_[k], Kind::kArrive});
          break;
      }
    }
    if (dirty_.empty() && ack_changed_.empty()) continue;
    // When the last computation rated many flows (all-to-all: everything shares), the
    // next waits until kLargeGap after it, so that changes in between are rated
    // together; the flows keep their rates meanwhile, new ones wait.
    if (last_rated_ > kLargeComponent && last_rated_ > 16 * last_changes_ && now_ - last_recompute_ < kLargeGap) {
      if (!wake_pending_) events_.push({(last_recompute_ + kLargeGap).ps(), 0, Kind::kRecompute});
      wake_pending_ = true;
      continue;
    }
    // ACK loads that moved make their ports' flows worth rating again; that settles in
    // a few rounds (an ACK costs a few percent of its data).
    last_changes_ = changes_;
    changes_ = 0;
    for (int round = 0; round < 4 && (!dirty_.empty() || !ack_changed_.empty()); ++round) {
      for (PortId p : ack_changed_) mark(p);
      ack_changed_.clear();
      recompute();
    }
    ack_changed_.clear();
    last_recompute_ = now_;
  }
}

Time FluidNetwork::ideal(uint32_t id) const {
  const FluidFlow& f = flows_[id];
  return Time::ps(int64_t(std::ceil(double(f.bytes) / f.alone_rate))) + f.latency;
}

std::vector<FlowOutcome> FluidNetwork::outcomes() const {
  std::vector<FlowOutcome> out(flows_.size());
  for (size_t i = 0; i < flows_.size(); ++i) {
    const FluidFlow& f = flows_[i];
    out[i] = {f.start, f.received_at, f.bytes, f.state != State::kWaiting, f.state == State::kReceived};
  }
  return out;
}

}  // namespace xm::sim
