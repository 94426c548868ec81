// TiTa: end-network cooperative, proactive congestion control (ours; docs/tita.md).
//
// Three parts, each can be switched off for the ablation:
//  - switch: every switch egress measures its own utilisation (txRate/B + queue/(B·T),
//    an EWMA over the base RTT) and writes it into one 4-byte field of a passing data
//    packet if it is the largest so far; the receiver echoes it. The sender runs
//    HPCC's multiplicative law on that one number (off: per-hop INT, as HPCC).
//  - fan-in: the receiver counts the flows sending to it and puts its fair share
//    η·C/n and n in every ACK; when n grows, every sender to it cuts to the share at once,
//    before the newcomer's burst has built a queue (off: wait for the queue to show). The
//    receiver also measures the mean rate its long senders arrive at, and each moves a
//    fraction γ of its gap to that mean per RTT: zero-sum, so it changes no total (the
//    utilisation loop owns that) but makes flows meet in a few RTTs, not the thousands
//    HPCC's W_AI alone needs.
//  - start: a new flow to a receiver this sender's last flow to it ended less than
//    share_ttl ago starts at the smallest share that receiver advertised then, with a
//    window to match — repeated patterns (an incast every training step) start at their
//    fair share instead of bursting (off: line rate and a full BDP window, as HPCC).
#pragma once

#include <unordered_map>
#include <vector>

#include "sim/cc/cc.h"

namespace xm::sim {

struct TitaParams {
  double eta = 0.95;
  double gamma = 0.25;  // share of the gap to the receiver's fair share closed per RTT
  Rate w_ai = Rate::mbps(40);
  Rate min_rate = Rate::gbps(1);
  Time share_ttl = Time::ms(1);  // how long a finished flow's share predicts the next one's
  bool switch_util = true;
  bool fan_in = true;
  bool fair_start = true;
  bool cut_newcomer = false;  // a new long flow also goes to the share at its first ACK
  static TitaParams for_line(Rate line);
};

class Tita final : public CongestionControl {
 public:
  Tita(TitaParams params, std::string name) : p_(params), name_(std::move(name)) {}
  std::string name() const override { return name_; }
  CcNeeds needs() const override {
    return CcNeeds{.int_hops = !p_.switch_util, .path_util = p_.switch_util};
  }
  void on_start(CcHost& host, uint32_t flow) override;
  void on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* hops) override;
  void on_receive(CcHost& host, uint32_t flow, const Packet& data, Packet& ack) override;
  void on_finish(CcHost& host, uint32_t flow) override;

  const TitaParams& params() const { return p_; }

 private:
  struct State {
    uint64_t last_update_seq = 0;
    bool have_feedback = false;
    Rate reference;
    double u = 0;          // EWMA of per-hop INT (only without the switch part)
    uint16_t fan_in = 0;   // the receiver's count at the last ACK
    Rate share;            // the receiver's fair share at the last ACK (0: none yet)
    Rate mean;             // the mean rate of the receiver's long senders (0: none yet)
    Rate least_share;      // the smallest share seen (0: none yet)
    uint8_t hops = 0;
    IntHop hop[kMaxIntHops];
  };
  struct Share {
    Rate rate;
    Time at;
  };
  double utilisation(CcHost& host, State& s, const Packet& ack, const IntHop* hops, double& dt);
  void apply(CcHost& host, uint32_t flow, Rate rate, bool full);

  TitaParams p_;
  std::string name_;
  std::vector<State> state_;
  std::unordered_map<uint64_t, Share> shares_;  // (sender, receiver) -> last advertised share
  struct Arrivals {
    double bps = 0;  // EWMA over the base RTT of the wire bits/s of long flows arriving
    Time at;
  };
  std::vector<Arrivals> arrivals_;  // per receiving host
};

}  // namespace xm::sim
