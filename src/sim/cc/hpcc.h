// HPCC (Li et al., SIGCOMM 2019): window and rate from in-band telemetry.
//
// Every switch on the path records, per packet, its egress queue, bytes sent and a
// timestamp (INT); the receiver echoes them in the ACK. Per ACK the sender computes each
// hop's normalised load u = txRate/B + min(queue, previous queue)/(B·T), keeps the
// largest as an EWMA over the base RTT T, and sets the rate to
//   R = R_c / (U/η) + W_AI   when U ≥ η or after maxStage additive steps,
//   R = R_c + W_AI           otherwise,
// where the reference R_c is updated once per RTT (when an ACK covers the sequence that
// was next to send at the previous update) and per-ACK reactions start from it. The
// window is R·T (the HPCC simulator's variable window). Parameters: η = 0.95,
// maxStage = 0, W_AI = 10 Mbit/s × (line rate / 25 Gbit/s), minimum rate 1 Gbit/s.
#pragma once

#include <vector>

#include "sim/cc/cc.h"

namespace xm::sim {

struct HpccParams {
  double eta = 0.95;
  uint32_t max_stage = 0;
  Rate w_ai = Rate::mbps(40);
  Rate min_rate = Rate::gbps(1);
  static HpccParams for_line(Rate line);
};

class Hpcc final : public CongestionControl {
 public:
  Hpcc(HpccParams params, std::string name) : p_(params), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  CcNeeds needs() const override { return CcNeeds{.int_hops = true}; }
  void on_start(CcHost& host, uint32_t flow) override;
  void on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* hops) override;

 private:
  struct State {
    uint64_t last_update_seq = 0;
    bool have_hops = false;
    Rate reference;
    uint32_t stage = 0;
    double u = 0;
    uint8_t hops = 0;
    IntHop hop[kMaxIntHops];
  };
  HpccParams p_;
  std::string name_;
  std::vector<State> state_;
};

}  // namespace xm::sim
