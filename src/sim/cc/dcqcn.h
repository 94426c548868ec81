// DCQCN (Zhu et al., SIGCOMM 2015) as NICs implement it and the HPCC simulator models it.
//
// Switches mark ECN (RED); the receiver returns a CNP on the ACK of a marked packet; the
// sender keeps a congestion estimate alpha (EWMA with gain g, updated every
// alpha_interval: up if a CNP came in that interval, down otherwise), checks every
// decrease_interval whether a CNP came and if so cuts rate by alpha / 2 (remembering the
// old rate as the target), and every increase_interval (and, in the paper's variant,
// every byte_counter bytes) moves back towards the target: fast recovery, then additive
// (AI), then hyper-additive (HAI) increase. No window.
//
// The periodic timers are evaluated lazily where that is exact: alpha is rolled forward
// in closed form when it is read, and a decrease check is scheduled only when a CNP has
// arrived, so an uncongested flow costs no events.
#pragma once

#include <vector>

#include "sim/cc/cc.h"

namespace xm::sim {

struct DcqcnParams {
  Time alpha_interval = Time::us(1);
  Time decrease_interval = Time::us(4);
  Time increase_interval = Time::us(300);
  double g = 1.0 / 256;
  uint32_t fast_recovery_steps = 1;
  uint64_t byte_counter = 0;  // 0: timer only (vendor); the paper uses 10 MB
  Rate ai = Rate::mbps(20);
  Rate hai = Rate::mbps(200);
  Rate min_rate = Rate::gbps(1);
  double rate_on_first_cnp = 1.0;
  bool clamp_target = false;

  // The HPCC simulator's Mellanox model (its run.py "dcqcn"), scaled to `line`.
  static DcqcnParams vendor(Rate line);
  // The DCQCN paper's timers (the HPCC simulator's "dcqcn_paper") with the paper's five
  // fast-recovery steps and 10 MB byte counter.
  static DcqcnParams paper(Rate line);
};

class Dcqcn final : public CongestionControl {
 public:
  Dcqcn(DcqcnParams params, std::string name) : p_(params), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  CcNeeds needs() const override { return CcNeeds{.ecn = true}; }
  void on_start(CcHost& host, uint32_t flow) override;
  void on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* hops) override;
  void on_timer(CcHost& host, uint32_t flow, uint8_t timer) override;

  const DcqcnParams& params() const { return p_; }

 private:
  static constexpr uint8_t kDecreaseTimer = 0, kIncreaseTimer = 1;
  struct State {
    Rate target;
    double alpha = 1;
    bool cnp_seen = false;        // any CNP yet (timers start at the first)
    bool alpha_cnp = false;       // a CNP in the current alpha interval
    bool decrease_cnp = false;    // a CNP since the last decrease check
    bool decrease_pending = false;
    bool increasing = false;      // the increase timer runs
    Time first_cnp;               // phase of the alpha and decrease grids
    Time next_alpha;              // next alpha update
    uint32_t timer_stage = 0, byte_stage = 0;
    uint64_t acked_at_increase = 0;
  };
  void roll_alpha(State& s, Time now) const;
  void increase(CcHost& host, uint32_t flow, State& s, bool by_timer);

  DcqcnParams p_;
  std::string name_;
  std::vector<State> state_;
};

}  // namespace xm::sim
