// The flow-level engine: each flow a fluid that drains at its max-min fair share of the
// links on its path, recomputed whenever a flow starts or finishes; no packets.
//
// It runs the same flows as the packet engine (Network) on the same topology: the same
// ECMP paths (ecmp.h), so the same flows collide; the same dependencies; headers and
// the ACKs coming back cost link capacity as they do there. A flow's last byte arrives
// when it has drained plus its path's latency (propagation, and one packet's
// serialization on every hop but the slowest, which the drain already counts). What it
// leaves out: queues, PFC, loss and congestion control; it is what an ideal congestion
// control would reach.
//
// Rates are recomputed, once per instant at which anything changes (flows of a
// collective step start and end together), for the flows that share a data path with a
// changed one, transitively. ACKs load the links they cross by the rates last computed
// (a few percent of a link) without tying their flows into the same computation, which
// keeps each computation to the flows that really compete (e.g. one ring hop's); a port
// whose ACK load moved has its flows rated again, for a few rounds at the same instant.
// Where nearly everything shares (an all-to-all), one flow's end re-rates thousands;
// such computations come at most every 0.5 us, changes in between waiting for the next.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "sim/config.h"
#include "sim/flow.h"
#include "sim/random.h"
#include "sim/routing.h"
#include "sim/topology.h"
#include "util/result.h"

namespace xm::sim {

struct FluidCounters {
  size_t flows_done = 0;
  uint64_t events = 0;        // flow arrivals, drains and receptions
  uint64_t recomputes = 0;    // rate computations
  uint64_t flows_rated = 0;   // flows whose rate they set, summed
};

class FluidNetwork {
 public:
  FluidNetwork(const SimTopology& topology, const NetConfig& config, uint64_t seed);

  void reserve(size_t flows);  // room for this many flows, to add them without regrowing
  // Same contract as Network::add_flow.
  Result<uint32_t> add_flow(const FlowSpec& spec);
  // Runs until every flow has arrived or simulated time passes `stop`; calls `progress`
  // about every million events.
  void run(Time stop, const std::function<void(const FluidNetwork&)>& progress = {});

  std::vector<FlowOutcome> outcomes() const;
  // Flow `id` alone on the network: its drain at the slowest hop, plus its latency.
  Time ideal(uint32_t id) const;
  const FluidCounters& counters() const { return counters_; }
  uint64_t events() const { return counters_.events; }
  Time now() const { return now_; }
  size_t flow_count() const { return flows_.size(); }

 private:
  enum class State : uint8_t { kWaiting, kQueued, kActive, kDrained, kReceived };  // kQueued: behind its connection's previous flow
  struct FluidFlow {
    double remaining = 0;  // payload bytes still to send
    double rate = 0;       // payload bytes per ps
    int64_t last = 0;      // ps: when `remaining` was last brought up to date
    int64_t drain_at = 0;              // ps: when it drains at its current rate
    int64_t queued_at = INT64_MAX;     // ps: its earliest drain event in the queue
    uint32_t pending = 0;  // flows it still waits for
    uint32_t follows = UINT32_MAX;   // the previous flow on its connection (FlowSpec::follows)
    uint32_t follower = UINT32_MAX;  // the next flow on its connection
    uint32_t entries = 0;  // its path: data ports [entries, acks), ACK ports [acks, entries_end)
    uint32_t acks = 0, entries_end = 0;
    State state = State::kWaiting;
    uint64_t bytes = 0;
    Time start, received_at, latency;
    double alone_rate = 0;  // payload bytes per ps with the network to itself
  };
  // A port a flow uses, and how many wire bytes it costs per payload byte there.
  struct Entry {
    PortId port;
    float weight;
    uint32_t slot;  // data entries: its index in the port's list, while the flow is active
  };
  enum class Kind : uint8_t { kArrive, kDrained, kReceived, kRecompute };
  struct Event {
    int64_t t;
    uint32_t flow;
    Kind kind;
    bool operator>(const Event& o) const { return t > o.t; }
  };

  void activate(uint32_t f);
  void deactivate(uint32_t f);
  void set_rate(uint32_t f, double rate);
  bool follows_unsent(uint32_t f) const;  // its connection's previous flow has bytes to send
  void mark(PortId p);
  void recompute();

  const SimTopology& topology_;
  NetConfig config_;
  Wiring wiring_;
  Routing routing_;
  std::vector<uint64_t> seeds_;       // per switch
  std::vector<uint16_t> next_sport_;  // per host, as the packet engine numbers them
  std::vector<double> capacity_;      // per port: wire bytes per ps
  std::vector<double> ack_load_;      // per port: wire bytes per ps of ACKs, at the last rates
  std::vector<PortId> ack_changed_;   // ports whose ACK load moved since their flows were rated

  struct Paths {
    std::vector<PortId> data, acks;
  };
  struct Tuple {
    uint32_t src, dst;
    uint16_t sport, dport;
    bool operator==(const Tuple&) const = default;
  };
  struct TupleHash {
    size_t operator()(const Tuple& t) const {
      return size_t(mix64((uint64_t(t.src) << 32 | t.dst) ^ mix64(uint64_t(t.sport) << 16 | t.dport)));
    }
  };
  std::unordered_map<Tuple, Paths, TupleHash> paths_;  // a connection's, by its 5-tuple
  std::vector<FluidFlow> flows_;
  std::vector<Entry> entries_;
  std::vector<uint32_t> entry_flow_;
  std::vector<std::vector<uint32_t>> after_;       // per flow, until run() turns them around
  std::vector<uint32_t> dependents_begin_, dependents_;
  std::vector<std::vector<uint32_t>> port_entries_;  // per port: data entries of active flows

  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  // recompute()'s working space, kept between calls (most calls rate a few flows).
  using Candidate = std::pair<double, uint32_t>;  // share when queued, port index
  struct Scratch {
    std::vector<uint32_t> flows;
    std::vector<double> left, weight, rate;
    std::vector<Candidate> heap;
  } scratch_;
  // The ports changed since the last computation, then those it reaches; per port its
  // index there, per flow its index among the flows it rates (kUnmarked: neither).
  static constexpr uint32_t kUnmarked = UINT32_MAX;
  std::vector<PortId> dirty_;
  std::vector<uint32_t> port_index_, flow_index_;
  Time now_;
  FluidCounters counters_;
  // Computations that rate this many flows, 16 or more per flow that started or ended
  // (one change moved many: everything shares), come at most one per kLargeGap.
  static constexpr size_t kLargeComponent = 512;
  size_t changes_ = 0, last_changes_ = 0;  // flows started or ended since the last computation, and before it
  static constexpr Time kLargeGap = Time::ns(500);
  Time last_recompute_ = Time::ps(INT64_MIN / 2);
  size_t last_rated_ = 0;
  bool wake_pending_ = false;
};

}  // namespace xm::sim
