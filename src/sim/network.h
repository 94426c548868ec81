// The simulated fabric: hosts with RoCEv2 NICs, switches with shared buffers, the links
// between them, and the flows that run over them.
//
// Life cycle: construct from a topology, a configuration, an algorithm and a seed; add
// flows; run once. Everything a run produces is read afterwards through flows(),
// counters() and the per-port accessors. One Network is one simulation: it owns its
// engine, packets and random numbers, so several can run in parallel threads.
//
// Implementation files: network.cc (set-up, events, flows), link.cc (ports and wires),
// switch.cc (forwarding, buffer, ECN, INT, PFC), nic.cc (sending, receiving, ACKs).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/cc/cc.h"
#include "sim/config.h"
#include "sim/engine.h"
#include "sim/flow.h"
#include "sim/histogram.h"
#include "sim/packet_pool.h"
#include "sim/port.h"
#include "sim/random.h"
#include "sim/routing.h"
#include "sim/shared_buffer.h"
#include "sim/topology.h"

namespace xm::sim {

// Counters of one run. "Wire" bytes include headers; data counters count data packets.
struct Counters {
  uint64_t data_packets_sent = 0, data_wire_bytes_sent = 0, payload_bytes_sent = 0;
  uint64_t data_packets_delivered = 0, data_wire_bytes_delivered = 0;
  uint64_t data_packets_dropped = 0, data_wire_bytes_dropped = 0;
  uint64_t control_packets_dropped = 0;
  uint64_t retransmitted_bytes = 0;
  uint64_t pause_frames = 0, resume_frames = 0;
  uint64_t ecn_marks = 0, cnps = 0, acks = 0, nacks = 0, timeouts = 0;
  uint64_t flows_started = 0, flows_done = 0;
  uint64_t lost_on_links = 0;    // frames lost to links down or lossy (also counted as drops)
  uint64_t reroutes = 0;
};

struct InFlightData {
  uint64_t packets = 0, wire_bytes = 0;
};

class Network final : private CcHost {
 public:
  // Preconditions: check_topology(topology) passed; `cc` outlives the network.
  Network(const SimTopology& topology, const NetConfig& config, CongestionControl& cc, uint64_t seed);
  Network(const Network&) = delete;
  Network& operator=(const Network&) = delete;

  // Adds a flow to run; returns its id (dense, from 0). Error on bad hosts, size 0, a
  // class outside 1..3 or a dependency on a flow not added yet.
  Result<uint32_t> add_flow(const FlowSpec& spec);
  // Schedules a change to a link (faults.cc). Before run(); error on a link out of
  // range, a rate not above 0 or a loss outside [0, 1].
  Status add_link_event(const LinkEvent& event);

  // Runs until every flow is done, nothing is left to happen, or simulated time `stop`.
  // `progress` is called about every million events. Returns true if all flows finished.
  // May be called again with a later `stop` to continue (e.g. to sample rates).
  bool run(Time stop, const std::function<void(const Network&)>& progress = {});

  Time now() const override { return engine_.now(); }
  uint64_t events() const { return engine_.events(); }
  const SimTopology& topology() const { return topology_; }
  const NetConfig& config() const { return config_; }
  const std::vector<Flow>& flows() const { return flows_; }
  std::vector<FlowOutcome> outcomes() const;  // what the flows did, as either engine reports it
  const Counters& counters() const { return counters_; }
  uint64_t live_packets() const { return pool_.live(); }
  // Data packets queued in switches or on wires now (sent, neither delivered nor dropped).
  InFlightData in_flight_data() const;
  size_t packet_capacity() const { return pool_.capacity(); }
  Time base_rtt() const override { return base_rtt_; }

  // Per-port results, for utilisation and pause statistics.
  size_t port_count() const { return ports_.size(); }
  const Port& port(size_t i) const { return ports_[i]; }
  // Names of link classes ("tor->host", ...), indexed by Port::link_class.
  const std::vector<std::string>& link_classes() const { return link_classes_; }
  // Queue lengths (bytes, this class) seen by data packets arriving at switch egress
  // queues, per link class of the egress port.
  const std::vector<Histogram>& queue_histograms() const { return queue_hist_; }
  // Total time ports spent paused (summed over ports and classes), including pauses
  // still in force at the end of the run.
  Time paused_time(size_t port) const;
  // The traffic window: from 0 to the last flow's start. Port::window_tx_bytes holds what
  // each port had sent by then (utilisation under load, without the drain).
  Time traffic_window() const { return window_end_; }

 private:
  enum Kind : uint32_t {
    kTxDone = 0, kArrival = 1, kWake = 2, kFlowArrivals = 3, kRto = 4, kSnapshot = 5,
    kLinkEvent = 6, kReroute = 7, kCcTimer = 8,
  };
  static constexpr uint32_t target(uint32_t kind, uint32_t index) { return (kind << 28) | index; }
  void dispatch(uint32_t target);

  // network.cc
  void start_flow(uint32_t id);
  void start_due_flows();
  void finish_flow(uint32_t id);
  void flow_received(uint32_t id);
  void scan_timeouts();
  Time ideal_fct(const Flow& f) const;
  Time hpcc_standalone_fct(const Flow& f, const std::vector<uint32_t>& path) const;
  // link.cc
  void kick(PortId p);
  void kick_later(PortId p);
  void transmit(PortId p);
  bool has_more(const Port& p) const;
  void arrive(PortId p);
  void handle_pfc(PortId at, const Packet& frame);
  void send_pfc(PortId p, PacketKind kind, int cls);
  // switch.cc
  void switch_receive(PortId in, PacketId id);
  PacketId switch_dequeue(PortId p);
  void drop(PacketId id);
  // faults.cc
  void apply_link_event(const LinkEvent& event);
  void link_down(PortId p);
  void link_up(PortId p);
  void reroute();
  bool lost_on_arrival(const Port& port, const Packet& pkt);
  int live_hop(NodeIndex sw, std::span<const uint16_t> hops, uint64_t key) const;
  // nic.cc
  void host_receive(PortId in, PacketId id);
  PacketId host_dequeue(PortId p);
  PacketId make_data(Flow& f, uint32_t id);
  bool may_send(const Port& port, const Flow& f) const;
  PacketId token_round_dequeue(PortId p);
  PacketId send_tokens(Flow& f, uint32_t id);
  void receive_data(PortId in, PacketId id);
  void receive_ack(PacketId id);
  void schedule_wake(PortId p, Time at);
  bool accept_out_of_order(Flow& f, const Packet& pkt);
  void absorb_out_of_order(Flow& f);
  static constexpr uint64_t kOooWindow = 256;  // packets a spraying receiver tracks ahead

  // CcHost.
  Flow& flow(uint32_t id) override { return flows_[id]; }
  void set_rate(uint32_t id, Rate rate) override;
  void set_window(uint32_t id, uint64_t bytes) override { flows_[id].window = bytes; }
  void set_timer(uint32_t id, uint8_t timer, Time at) override;
  void cancel_timer(uint32_t id, uint8_t timer) override;
  uint64_t base_bdp(uint32_t id) const override;
  uint32_t fan_in(uint32_t host) const override { return fan_in_[host]; }
  Rate host_rate(uint32_t host) const override { return ports_[wiring_.first_port[host]].rate; }

  const SimTopology topology_;
  const NetConfig config_;
  CongestionControl& cc_;
  const CcNeeds needs_;
  Wiring wiring_;
  Routing routing_;
  Engine engine_;
  PacketPool pool_;
  Random rng_;
  std::vector<Port> ports_;
  std::vector<SharedBuffer> buffers_;       // per switch
  std::vector<uint64_t> switch_seed_;       // per switch: ECMP hash seed
  std::vector<Flow> flows_;
  std::vector<std::vector<uint32_t>> dependents_;  // per flow (empty for most)
  std::vector<uint32_t> arrivals_;          // flows without dependencies, by start time
  size_t next_arrival_ = 0;
  std::vector<Time> cc_due_;                // per flow × kCcTimers
  std::vector<uint32_t> fan_in_;            // per host
  std::vector<uint16_t> next_sport_;        // per host
  bool ooo_receiver_ = false;               // spraying: accept out-of-order packets
  std::unordered_map<uint32_t, std::vector<uint8_t>> ooo_;  // per flow, once reordered
  std::vector<LinkEvent> link_events_;      // by time
  size_t next_link_event_ = 0;
  std::vector<char> link_down_, link_drained_;  // per link
  bool faults_ = false;                     // some link event is scheduled: forwarding checks ports
  std::vector<std::string> link_classes_;
  std::vector<Histogram> queue_hist_;
  Counters counters_;
  Time base_rtt_;
  uint32_t data_overhead_ = 0;  // wire bytes of a data packet beyond its payload
  uint32_t ack_wire_ = 0;
  int64_t token_cap_ = 0;       // kTokenRounds: a flow's tokens stop at two rounds (or packets)
  bool ran_ = false;
  bool rto_scan_scheduled_ = false;
  Time window_end_;
};

}  // namespace xm::sim
