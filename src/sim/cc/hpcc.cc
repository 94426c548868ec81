#include "sim/cc/hpcc.h"

#include <algorithm>

namespace xm::sim {

HpccParams HpccParams::for_line(Rate line) {
  HpccParams p;
  p.w_ai = Rate::mbps(10 * line.gbps() / 25);
  return p;
}

void Hpcc::on_start(CcHost& host, uint32_t flow) {
  if (state_.size() <= flow) state_.resize(flow + 1);
  State& s = state_[flow];
  s = State{};
  s.reference = host.flow(flow).max_rate;
  host.set_window(flow, host.base_bdp(flow));
}

void Hpcc::on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* hops) {
  State& s = state_[flow];
  Flow& f = host.flow(flow);
  const bool full = ack.seq > s.last_update_seq;  // a whole RTT of feedback since the last update
  if (!s.have_hops) {
    // First feedback: remember the hops; rates need two samples.
    s.have_hops = true;
    s.last_update_seq = f.snd_nxt;
    s.hops = ack.hops;
    std::copy(hops, hops + ack.hops, s.hop);
    return;
  }
  const double T = host.base_rtt().seconds_f();
  double U = 0, dt = 0;
  bool updated = false;
  const uint8_t n = std::min(ack.hops, s.hops);
  for (uint8_t i = 0; i < n; ++i) {
    const IntHop& now = hops[i];
    const IntHop& before = s.hop[i];
    const uint32_t tau_ns = now.time_ns - before.time_ns;
    if (tau_ns == 0) continue;
    const double tau = tau_ns * 1e-9;
    const double bps = double(now.rate_mbps) * 1e6;
    const double tx_rate = double(uint32_t(now.tx_bytes - before.tx_bytes)) * 8 / tau;
    const double u = tx_rate / bps + double(std::min(now.qlen_bytes, before.qlen_bytes)) * 8 / (bps * T);
    if (u > U) U = u, dt = tau;
    updated = true;
  }
  s.hops = ack.hops;
  std::copy(hops, hops + ack.hops, s.hop);
  if (updated) {
    dt = std::min(dt, T);
    s.u = (s.u * (T - dt) + U * dt) / T;
    const double k = s.u / p_.eta;
    Rate rate;
    uint32_t stage;
    if (k >= 1 || s.stage >= p_.max_stage) {
      rate = k > 1e-6 ? s.reference / k + p_.w_ai : f.max_rate;
      stage = 0;
    } else {
      rate = s.reference + p_.w_ai;
      stage = s.stage + 1;
    }
    rate = min(max(rate, p_.min_rate), f.max_rate);
    host.set_rate(flow, rate);
    host.set_window(flow, std::max<uint64_t>(1, uint64_t(double(host.base_bdp(flow)) * (rate / f.max_rate))));
    if (full) {
      s.reference = rate;
      s.stage = stage;
    }
  }
  if (full && f.snd_nxt > s.last_update_seq) s.last_update_seq = f.snd_nxt;
}

}  // namespace xm::sim
