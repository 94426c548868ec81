#include "sim/cc/tita.h"

#include <algorithm>

namespace xm::sim {

TitaParams TitaParams::for_line(Rate line) {
  TitaParams p;
  p.w_ai = Rate::mbps(10 * line.gbps() / 25);
  return p;
}

void Tita::on_start(CcHost& host, uint32_t flow) {
  if (state_.size() <= flow) state_.resize(flow + 1);
  State& s = state_[flow];
  s = State{};
  Flow& f = host.flow(flow);
  Rate start = f.max_rate;
  if (p_.fair_start) {
    auto it = shares_.find(uint64_t(f.src) << 32 | f.dst);
    if (it != shares_.end() && host.now() - it->second.at <= p_.share_ttl) start = min(start, it->second.rate);
  }
  s.reference = start;
  host.set_rate(flow, start);
  host.set_window(flow, std::max<uint64_t>(1, uint64_t(double(host.base_bdp(flow)) * (start / f.max_rate))));
}

void Tita::on_finish(CcHost& host, uint32_t flow) {
  const State& s = state_[flow];
  const Flow& f = host.flow(flow);
  if (p_.fair_start && s.least_share > Rate()) shares_[uint64_t(f.src) << 32 | f.dst] = Share{s.least_share, host.now()};
}

void Tita::on_receive(CcHost& host, uint32_t flow, const Packet& data, Packet& ack) {
  if (!p_.fan_in && !p_.fair_start) return;
  const Flow& f = host.flow(flow);
  const uint32_t n = host.fan_in(f.dst);
  if (arrivals_.size() <= f.dst) arrivals_.resize(f.dst + 1);
  Arrivals& a = arrivals_[f.dst];
  if (f.in_fan_in) {
    // Long flows' arrival rate: an EWMA over T of their wire bits, which a steady
    // arrival at rate R holds at R.
    const double T = host.base_rtt().seconds_f();
    const double dt = std::min((host.now() - a.at).seconds_f(), T);
    a.bps = a.bps * (1 - dt / T) + double(data.wire_bytes) * 8 / T;
    a.at = host.now();
    ack.mean_mbps = uint32_t(a.bps / 1e6 / std::max<uint32_t>(1, n));
  }
  ack.fan_in = uint16_t(std::min<uint32_t>(n, UINT16_MAX));
  ack.share_mbps = uint32_t(p_.eta * host.host_rate(f.dst).bps() / 1e6 / std::max<uint32_t>(1, n));
}

// The largest normalised load on the path and the time it covers.
double Tita::utilisation(CcHost& host, State& s, const Packet& ack, const IntHop* hops, double& dt) {
  if (p_.switch_util) {
    dt = 0;
    return ack.path_util;
  }
  const double T = host.base_rtt().seconds_f();
  double U = -1;
  const uint8_t n = std::min(ack.hops, s.hops);
  for (uint8_t i = 0; i < n; ++i) {
    const uint32_t tau_ns = hops[i].time_ns - s.hop[i].time_ns;
    if (tau_ns == 0) continue;
    const double bps = double(hops[i].rate_mbps) * 1e6;
    const double tx = double(uint32_t(hops[i].tx_bytes - s.hop[i].tx_bytes)) * 8 / (tau_ns * 1e-9);
    const double u = tx / bps + double(std::min(hops[i].qlen_bytes, s.hop[i].qlen_bytes)) * 8 / (bps * T);
    if (u > U) U = u, dt = tau_ns * 1e-9;
  }
  s.hops = ack.hops;
  std::copy(hops, hops + ack.hops, s.hop);
  if (U < 0) return -1;
  dt = std::min(dt, T);
  s.u = (s.u * (T - dt) + U * dt) / T;
  return s.u;
}

void Tita::apply(CcHost& host, uint32_t flow, Rate rate, bool full) {
  State& s = state_[flow];
  Flow& f = host.flow(flow);
  rate = min(max(rate, p_.min_rate), f.max_rate);
  host.set_rate(flow, rate);
  host.set_window(flow, std::max<uint64_t>(1, uint64_t(double(host.base_bdp(flow)) * (rate / f.max_rate))));
  if (full) s.reference = rate;
}

void Tita::on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* hops) {
  State& s = state_[flow];
  Flow& f = host.flow(flow);
  const bool full = ack.seq > s.last_update_seq;
  if (p_.fan_in && ack.fan_in > s.fan_in && (s.fan_in > 0 || p_.cut_newcomer)) {
    // A new long sender reached our receiver (or we are it): go to the fair share now,
    // before the newcomer's window has built a queue.
    const Rate share = Rate::mbps(ack.share_mbps);
    if (share < f.rate) apply(host, flow, share, true);
    s.reference = min(s.reference, share);
  }
  s.fan_in = ack.fan_in;
  if (ack.mean_mbps > 0) s.mean = Rate::mbps(ack.mean_mbps);
  if (ack.share_mbps > 0) {
    s.share = Rate::mbps(ack.share_mbps);
    if (s.least_share == Rate() || s.share < s.least_share) s.least_share = s.share;
  }
  if (!s.have_feedback) {
    s.have_feedback = true;
    s.last_update_seq = f.snd_nxt;
    if (!p_.switch_util) {
      s.hops = ack.hops;
      std::copy(hops, hops + ack.hops, s.hop);
    }
    return;
  }
  double dt = 0;
  const double U = utilisation(host, s, ack, hops, dt);
  if (U >= 0) {
    const double k = U / p_.eta;
    Rate rate = k > 1e-6 ? s.reference / k + p_.w_ai : f.max_rate;
    // Towards the mean of the receiver's long senders (zero-sum across them).
    if (p_.fan_in && s.mean > Rate()) rate = rate + (s.mean - s.reference) * p_.gamma;
    apply(host, flow, rate, full);
  }
  if (full && f.snd_nxt > s.last_update_seq) s.last_update_seq = f.snd_nxt;
}

}  // namespace xm::sim
