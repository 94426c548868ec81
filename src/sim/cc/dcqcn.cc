#include "sim/cc/dcqcn.h"

#include <cmath>

namespace xm::sim {

DcqcnParams DcqcnParams::vendor(Rate line) {
  DcqcnParams p;
  const double scale = line.gbps() / 25;
  p.ai = Rate::mbps(5 * scale);
  p.hai = Rate::mbps(50 * scale);
  return p;
}

DcqcnParams DcqcnParams::paper(Rate line) {
  DcqcnParams p = vendor(line);
  p.alpha_interval = Time::us(50);
  p.decrease_interval = Time::us(50);
  p.increase_interval = Time::us(55);
  p.fast_recovery_steps = 5;
  p.byte_counter = 10'000'000;
  return p;
}

void Dcqcn::on_start(CcHost& host, uint32_t flow) {
  if (state_.size() <= flow) state_.resize(flow + 1);
  state_[flow] = State{};
  state_[flow].target = host.flow(flow).max_rate;
  host.set_window(flow, 0);
}

// Applies the alpha updates due at or before `now`: the first uses the CNP flag of its
// interval, the rest (no CNP since) each multiply by (1 - g).
void Dcqcn::roll_alpha(State& s, Time now) const {
  if (!s.cnp_seen || s.next_alpha > now) return;
  s.alpha = (1 - p_.g) * s.alpha + (s.alpha_cnp ? p_.g : 0);
  s.alpha_cnp = false;
  s.next_alpha += p_.alpha_interval;
  if (s.next_alpha <= now) {
    const int64_t k = (now - s.next_alpha).ps() / p_.alpha_interval.ps() + 1;
    s.alpha *= std::pow(1 - p_.g, double(k));
    s.next_alpha += p_.alpha_interval * k;
  }
}

void Dcqcn::on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* /*hops*/) {
  State& s = state_[flow];
  const Time now = host.now();
  if (p_.byte_counter > 0 && s.increasing) {
    const uint64_t acked = host.flow(flow).snd_una;
    if (acked - s.acked_at_increase >= p_.byte_counter) {
      s.acked_at_increase = acked;
      increase(host, flow, s, false);
    }
  }
  if (!ack.cnp) return;
  roll_alpha(s, now);
  if (!s.cnp_seen) {
    // First CNP: alpha starts at 1; the grids start now (decrease 1 ns after alpha, so
    // a decrease sees the alpha update of the same instant).
    s.cnp_seen = true;
    s.alpha = 1;
    s.first_cnp = now;
    s.next_alpha = now + p_.alpha_interval;
    Flow& f = host.flow(flow);
    host.set_rate(flow, f.rate * p_.rate_on_first_cnp);
    s.target = host.flow(flow).rate;
  } else {
    s.alpha_cnp = true;
  }
  s.decrease_cnp = true;
  if (!s.decrease_pending) {
    // The next point of the decrease grid after now.
    const Time origin = s.first_cnp + Time::ns(1);
    const int64_t k = (now - origin).ps() / p_.decrease_interval.ps() + 1;
    s.decrease_pending = true;
    host.set_timer(flow, kDecreaseTimer, origin + p_.decrease_interval * k);
  }
}

void Dcqcn::on_timer(CcHost& host, uint32_t flow, uint8_t timer) {
  State& s = state_[flow];
  const Time now = host.now();
  if (timer == kDecreaseTimer) {
    s.decrease_pending = false;
    if (!s.decrease_cnp) return;
    roll_alpha(s, now);
    const Rate rate = host.flow(flow).rate;
    if (p_.clamp_target || s.timer_stage != 0) s.target = rate;
    host.set_rate(flow, max(p_.min_rate, rate * (1 - s.alpha / 2)));
    s.timer_stage = s.byte_stage = 0;
    s.decrease_cnp = false;
    s.increasing = true;
    s.acked_at_increase = host.flow(flow).snd_una;
    host.set_timer(flow, kIncreaseTimer, now + p_.increase_interval);
    return;
  }
  // Increase timer.
  increase(host, flow, s, true);
  const Flow& f = host.flow(flow);
  if (f.rate >= f.max_rate && s.target >= f.max_rate) {
    s.increasing = false;  // back at line rate: further increases would change nothing
    return;
  }
  host.set_timer(flow, kIncreaseTimer, now + p_.increase_interval);
}

void Dcqcn::increase(CcHost& host, uint32_t flow, State& s, bool by_timer) {
  const Flow& f = host.flow(flow);
  const uint32_t F = p_.fast_recovery_steps;
  enum { kFast, kAdditive, kHyper } phase;
  if (p_.byte_counter == 0) {
    phase = s.timer_stage < F ? kFast : s.timer_stage == F ? kAdditive : kHyper;
  } else {
    // The paper: fast recovery while both counters are below F, hyper-increase once both
    // exceed it, additive in between.
    const uint32_t hi = std::max(s.timer_stage, s.byte_stage), lo = std::min(s.timer_stage, s.byte_stage);
    phase = hi < F ? kFast : lo > F ? kHyper : kAdditive;
  }
  if (phase == kAdditive) s.target = min(f.max_rate, s.target + p_.ai);
  if (phase == kHyper) s.target = min(f.max_rate, s.target + p_.hai);
  host.set_rate(flow, (f.rate + s.target) / 2);
  if (by_timer) ++s.timer_stage;
  else ++s.byte_stage;
}

}  // namespace xm::sim
