// The congestion-control interface: one small module per algorithm.
//
// The NIC calls the algorithm at the sender when a flow starts, on every ACK or NACK
// (with its INT and CNP flag), on the algorithm's own timers, and when the flow ends; at
// the receiver just before each ACK leaves, so an algorithm can put its fields in it.
// The algorithm answers by setting the flow's rate and window through CcHost. All calls
// come from the simulation's single thread; state is per flow, indexed by flow id.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "sim/flow.h"
#include "sim/packet.h"
#include "sim/units.h"
#include "util/result.h"

namespace xm::sim {

// What an algorithm needs the network to provide.
struct CcNeeds {
  bool ecn = false;        // switches mark CE, receivers return CNPs
  bool int_hops = false;   // switches push per-hop INT records (HPCC)
  bool path_util = false;  // switches fold their measured utilisation into one field (TiTa)
};

// The algorithm's view of the network. Owned by the network; outlives every call.
class CcHost {
 public:
  virtual ~CcHost() = default;
  virtual Time now() const = 0;
  virtual Flow& flow(uint32_t id) = 0;
  // Sets the pacing rate (clamped to [min, line rate]) and re-paces the next packet.
  virtual void set_rate(uint32_t id, Rate rate) = 0;
  virtual void set_window(uint32_t id, uint64_t bytes) = 0;
  // Calls on_timer(id, timer) at `at`; a later call for the same timer replaces it.
  virtual void set_timer(uint32_t id, uint8_t timer, Time at) = 0;
  virtual void cancel_timer(uint32_t id, uint8_t timer) = 0;
  // The base RTT the algorithm normalises by: the largest idle RTT between two hosts
  // of the fabric (HPCC's global T), and the window that fills it at a host's line rate.
  virtual Time base_rtt() const = 0;
  virtual uint64_t base_bdp(uint32_t id) const = 0;
  // Receiver side: flows sending to host `h` now (first packet seen) with more than a
  // base BDP of the receiver's link still to come. Short messages are left out: they are
  // over within their first window and need no share. (A RoCE receiver knows a message's
  // length from its first packet's RDMA header.)
  virtual uint32_t fan_in(uint32_t host) const = 0;
  virtual Rate host_rate(uint32_t host) const = 0;
};

inline constexpr uint8_t kCcTimers = 4;

class CongestionControl {
 public:
  virtual ~CongestionControl() = default;
  virtual std::string name() const = 0;
  virtual CcNeeds needs() const = 0;

  // Sets the first rate and window. The flow's max_rate is the line rate.
  virtual void on_start(CcHost& host, uint32_t flow) = 0;
  // `hops` holds ack.hops INT records (echoed from the data packet) when needs().int_hops.
  virtual void on_ack(CcHost& host, uint32_t flow, const Packet& ack, const IntHop* hops) = 0;
  virtual void on_timer(CcHost& /*host*/, uint32_t /*flow*/, uint8_t /*timer*/) {}
  virtual void on_finish(CcHost& /*host*/, uint32_t /*flow*/) {}
  // Receiver: `ack` answers `data` and is about to be sent.
  virtual void on_receive(CcHost& /*host*/, uint32_t /*flow*/, const Packet& /*data*/, Packet& /*ack*/) {}
};

// Names: "none" (line rate), "dcqcn" (= dcqcn-vendor), "dcqcn-vendor", "dcqcn-paper",
// "hpcc", "tita", and TiTa ablations "tita-no-fanin", "tita-no-start", "tita-no-switch".
// Parameters scale with the host line rate where the HPCC simulator's do.
Result<std::unique_ptr<CongestionControl>> make_cc(std::string_view name, Rate host_rate);

// The names make_cc accepts, for help texts and errors.
const char* cc_names();

}  // namespace xm::sim
