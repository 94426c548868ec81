// A flow: one message on one RoCEv2 reliable connection (queue pair), with the state of
// both ends. The sender paces at `rate` and keeps at most `window` bytes unacknowledged
// (0: no window); the congestion-control algorithm sets both.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/units.h"
#include "util/result.h"

namespace xm::sim {

// What a workload asks for. A flow of no bytes is a barrier: it touches no link and
// arrives as soon as every flow it waits for has (src = dst is allowed there).
struct FlowSpec {
  uint32_t src = 0;      // host
  uint32_t dst = 0;      // host
  uint64_t bytes = 0;    // payload
  Time start;            // ignored while `after` is pending
  uint8_t cls = 1;       // data class (1..3)
  uint16_t dport = 100;
  uint16_t sport = 0;    // 0: a port of its own (a new queue pair); else this one, so that
                         // the messages of one connection share its 5-tuple and path
  std::vector<uint32_t> after;  // flows that must be fully received (at this flow's src) first
  // The flow before it on its connection (an earlier id; UINT32_MAX: none): a queue pair
  // or a socket sends its messages in order, so this one sends nothing until that one
  // has sent its last byte.
  uint32_t follows = UINT32_MAX;
  uint32_t group = 0;    // workload-defined (e.g. all-reduce step); reported with the flow
};

// What both engines refuse in a flow that would get id `id` among `hosts` hosts: a host
// out of range, a flow of bytes to itself, waiting on (or following) a flow not earlier.
Status check_flow(const FlowSpec& spec, uint32_t id, uint32_t hosts);

// What a run made of a flow, in the terms both engines report (packet and flow level).
struct FlowOutcome {
  Time start;        // when it began sending
  Time received_at;  // when its last byte arrived
  uint64_t bytes = 0;
  bool started = false, received = false;
};

// A change to a link at a given time (both directions): what operations must plan for.
struct LinkEvent {
  enum class Kind : uint8_t {
    kDown,     // carries nothing; what is queued for it or on its wire is lost
    kUp,
    kDrain,    // taken out of routing (after the reroute delay) while it still carries
    kRestore,  // back into routing
    kRate,     // re-rated to `rate`
    kLoss,     // loses each frame with probability `loss` (0 to stop)
  };
  Time at;
  uint32_t link = 0;  // index into SimTopology::links
  Kind kind = Kind::kDown;
  Rate rate;
  double loss = 0;
};

enum class FlowState : uint8_t { kWaiting, kActive, kDone };

// Field order follows use: the first cache line holds what the NIC scheduler reads for
// every flow it considers (it scans its port's active flows per packet).
struct Flow {
  // Sender, scanned per packet.
  uint64_t snd_nxt = 0, snd_una = 0;
  uint64_t size = 0;
  uint64_t window = 0;
  Time next_avail;      // pacing: earliest time of the next packet
  Rate rate;
  uint8_t cls = 1;
  FlowState state = FlowState::kWaiting;
  uint16_t sport = 0, dport = 0;
  uint32_t dst = 0;
  uint32_t hash_fwd = 0;  // ECMP hash of the 5-tuple, data direction

  // Sender, per packet sent or ACK.
  Rate max_rate;
  uint64_t snd_max = 0;  // highest byte ever sent + 1 (to count retransmissions)
  Time last_sent;        // when the last packet was sent, and its size (to re-pace on
  uint32_t last_wire = 0;  // a rate change, as a hardware rate limiter would)
  uint32_t port = 0;     // the sender's port this flow leaves on
  Time last_progress;    // last time snd_una advanced (RTO)
  int64_t tokens = 0;                 // NicArbitration::kTokenRounds: bytes it may send
  Time token_at;                      // when tokens were last refilled

  // Receiver.
  uint64_t rcv_nxt = 0;
  uint32_t src = 0;
  uint32_t hash_rev = 0;  // ECMP hash of the 5-tuple, ACK direction
  uint32_t unacked_packets = 0;
  bool rx_seen = false;   // the first packet arrived
  bool in_fan_in = false; // counted in the receiver's fan-in (more than a BDP to come)
  bool received = false;
  Time nack_until;
  uint64_t last_nack = UINT64_MAX;
  Time last_cnp = Time::ps(-1'000'000'000'000);
  Time received_at;      // when the last byte arrived in order

  // Identity and results.
  Time start;
  uint32_t group = 0;
  uint32_t pending_deps = 0;
  uint32_t follows = UINT32_MAX;  // see FlowSpec
  uint64_t retransmitted_bytes = 0;
  Time finish;           // when the sender got the last ACK
  Time ideal;            // the same flow alone on an idle network
};

}  // namespace xm::sim
