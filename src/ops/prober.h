// The agent's probes: UDP echoes between NICs, every host answering every other's.
//
// Each NIC address has an echo socket on `port` (the same on every host) and one sending
// socket per flow on port + 1 + f: a flow is a fixed 5-tuple, so ECMP keeps it on one
// path and a path that drops (a black hole for some 5-tuples) loses those flows only.
// Rail pairs use flow 0; cross-rail pairs every flow. A probe that is not answered within
// the timeout is lost; one that cannot be sent at all (no route, NIC down) too.
//
// The loop runs in 20 ms ticks (sending what falls due, reading replies, timing out)
// and wakes between them only to answer peers' probes: at the default rate of a 16 x 8
// fabric it costs about 1.4 % of a core (bench/agent_cpu.sh). Round trips are timed by the
// kernel's receive timestamps, so reading replies once a tick does not lengthen them.
//
// The rate adapts: every flow is probed once per `interval_s`; a loss makes the flow and
// every flow of its local NIC fast (`fast_interval_s`) until `suspect_hold_s` pass
// without one. A fabric too small to spend the healthy agent's budget (`budget_per_s`)
// at those settings gets more of both (within_budget()): where few pairs cross a cable,
// few fixed 5-tuples cross it, and a black hole may catch none of them. Sockets bind with IP_FREEBIND, so a NIC whose address is missing (down,
// misconfigured) fails its probes rather than the agent.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "ops/probe_targets.h"
#include "util/result.h"

namespace xm::ops {

struct ProberOptions {
  uint16_t port = 7947;
  uint32_t flows = 4;  // per cross-rail pair, at least
  double interval_s = 1.0;  // at most
  // Probes a second a healthy agent may send (0: exactly the flows and interval above).
  // 180 leaves a 16 x 8 fabric's agents as they are (184 flows once a second).
  double budget_per_s = 180;
  double fast_interval_s = 0.1;
  double suspect_hold_s = 10;
  double timeout_s = 0.5;
  uint32_t payload_bytes = 64;
};

struct FlowStats {
  uint64_t sent = 0, received = 0, lost = 0;
  uint64_t send_errors = 0;  // of the lost: the kernel refused to send (no route, NIC down)
  uint64_t late = 0;         // replies after their probe was counted lost
  // The latest probes lost one after another, none answered since: a 5-tuple a black
  // hole catches loses every one, random loss of a few per cent seldom two in a row.
  uint64_t lost_in_a_row = 0;
  double rtt_sum_s = 0;      // over the received
  bool fast = false;
};

struct ProberSnapshot {
  std::vector<FlowStats> flows;  // flow f of target t at flow_index(t, f)
  uint64_t echoed = 0;           // peers' probes answered
  double lag_sum_s = 0;          // how late probes left against their schedule, summed
  uint64_t lag_count = 0;
};

// What a prober of `targets` runs at: the budget a small fabric leaves at the asked
// interval is spent first on more 5-tuples per cross-rail pair (up to kBudgetFlows), so
// that some cross each uplink's hash buckets, then on a shorter interval (down to
// fast_interval_s), so that a loss is seen sooner. Never fewer flows, nor a longer
// interval, than `asked`.
constexpr uint32_t kBudgetFlows = 16;
ProberOptions within_budget(const ProberOptions& asked, const std::vector<ProbeTarget>& targets);

class Prober {
 public:
  // Opens every socket in the calling thread's network namespace.
  static Result<std::unique_ptr<Prober>> open(std::vector<ProbeTarget> targets, const ProberOptions& options);
  ~Prober();
  Prober(const Prober&) = delete;
  Prober& operator=(const Prober&) = delete;

  // Probes and answers until `stop` is set (checked every tick).
  void run(const std::atomic<bool>& stop);

  const std::vector<ProbeTarget>& targets() const { return targets_; }
  const ProberOptions& options() const { return options_; }  // within_budget() of those asked
  uint32_t flows_of(size_t target) const { return targets_[target].cross_rail ? options_.flows : 1; }
  size_t flow_index(size_t target, uint32_t flow) const { return flow_base_[target] + flow; }
  ProberSnapshot snapshot() const;

 private:
  using Clock = std::chrono::steady_clock;
  struct Nic {
    Ipv4 address;
    int echo_fd = -1;
    std::vector<int> send_fds;  // per flow
    Clock::time_point fast_until{};  // a loss on any of its flows makes them all fast
  };
  struct Flow {
    size_t target = 0;
    uint32_t flow = 0;
    size_t nic = 0;
    Clock::time_point due{};
  };
  // A probe sent and not yet answered or lost; the probe with sequence number s is
  // in_flight_[s - first_seq_] while it is (sequence numbers go up by one per probe).
  struct InFlight {
    size_t flow;
    Clock::time_point sent;  // for the timeout
    int64_t sent_ns;         // CLOCK_REALTIME, against the kernel's receive timestamp
    bool done = false;       // answered, or never sent
  };
  static constexpr std::chrono::milliseconds kTick{20};

  Prober(std::vector<ProbeTarget> targets, const ProberOptions& options);
  Status open_sockets();
  void send_due(Clock::time_point now);
  void expire(Clock::time_point now);
  void lose(size_t flow, Clock::time_point now);
  void drain_echo(int fd);
  void drain_replies(int fd);

  std::vector<ProbeTarget> targets_;
  ProberOptions options_;
  std::vector<size_t> flow_base_;
  std::vector<Nic> nics_;
  std::vector<Flow> flows_;
  uint64_t first_seq_ = 1;  // of in_flight_.front()
  std::deque<InFlight> in_flight_;  // in send order: the oldest times out first
  std::vector<std::byte> packet_;

  mutable std::mutex mu_;  // guards snapshot_
  ProberSnapshot snapshot_;
};

}  // namespace xm::ops
