// What travels on a link: RoCEv2 data packets, their ACKs and NACKs, and PFC frames.
//
// Packets live in a PacketPool and are passed around as 32-bit handles; nothing in the
// data path copies or allocates one. Sizes are modelled, not bytes: `wire_bytes` is
// what a packet occupies on the wire (headers, preamble and inter-frame gap included),
// and is what links serialise and buffers count.
#pragma once

#include <cstdint>

#include "sim/units.h"

namespace xm::sim {

using PacketId = uint32_t;
inline constexpr PacketId kNoPacket = UINT32_MAX;


enum class PacketKind : uint8_t {
  kData,
  kAck,     // cumulative: `seq` is the next byte the receiver expects
  kNack,    // go-back-N: resend from `seq`
  kPause,   // PFC XOFF for class `prio`
  kResume,  // PFC XON for class `prio`
};

// One switch hop's telemetry, as HPCC reads it: when the packet left the egress port,
// how many bytes that port had sent (wrapping), its queue then, and its speed.
struct IntHop {
  uint32_t time_ns = 0;
  uint32_t tx_bytes = 0;
  uint32_t qlen_bytes = 0;
  uint32_t rate_mbps = 0;
};
inline constexpr int kMaxIntHops = 5;

struct Packet {
  uint64_t seq = 0;        // data: offset of the first payload byte; ACK/NACK: see kind
  uint32_t flow = 0;       // the flow (queue pair) it belongs to
  uint32_t dst = 0;        // destination host
  uint32_t wire_bytes = 0;
  uint32_t payload = 0;
  uint32_t hash = 0;       // ECMP hash of its 5-tuple (direction-specific)
  uint16_t in_port = 0;    // local ingress port at the switch now holding it
  PacketKind kind = PacketKind::kData;
  uint8_t prio = 0;        // traffic class: 0 = control (ACK/NACK), 1.. = data
  bool ecn_ce = false;     // data: a switch marked Congestion Experienced
  bool cnp = false;        // ACK: carries a congestion notification (the CNP of DCQCN)
  uint8_t hops = 0;        // INT hops recorded
  bool lost = false;       // on a wire that went down: dropped when it would arrive
  // TiTa's fields (docs/tita.md): the largest utilisation a switch on the path measured,
  // and on ACKs what the receiver knows of its fan-in.
  float path_util = 0;
  uint32_t share_mbps = 0;  // the receiver's capacity share η·C/n
  uint32_t mean_mbps = 0;   // the mean rate its long senders arrive at now
  uint16_t fan_in = 0;
  // Where the packet waits: the next packet of the same queue or wire (PacketList), and on
  // a wire, when that next packet arrives — so a wire's arrivals chain without touching
  // the next packet before its turn.
  PacketId next = kNoPacket;
  Time next_at;
};
static_assert(sizeof(Packet) <= 64, "one cache line: every hop touches it");

// INT records live beside the packet (same id, PacketPool::int_stack), not in it: only
// HPCC reads them, and the packet itself stays one cache line.
struct IntStack {
  IntHop hop[kMaxIntHops];
};

}  // namespace xm::sim
