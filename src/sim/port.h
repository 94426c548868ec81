// One direction of a link: the sending node's egress port and the wire behind it.
//
// A port serialises one packet at a time at its rate; the packet then spends the link
// delay on the wire (`pipe`, FIFO because every packet on a wire takes the same delay)
// before the peer receives it. Egress queues are per traffic class, served by strict
// priority; PFC frames (`mac`) go first and are never paused. A class paused by the peer
// keeps its queue until RESUME. Host ports keep ACKs and NACKs in class 0 and ask the
// NIC's scheduler for data only when the wire is free, as a real NIC does.
#pragma once

#include <cstdint>
#include <vector>

#include "sim/packet.h"
#include "sim/packet_pool.h"
#include "sim/shared_buffer.h"
#include "sim/units.h"

namespace xm::sim {

inline constexpr uint8_t kMacBit = 0x80;  // Port::backlog: PFC frames wait

// Fields in the order the data path touches them (hot first), to keep the lines a
// packet's arrival and departure read few.
struct Port {
  uint32_t owner = 0;      // node
  uint32_t peer_node = 0;
  uint32_t peer = 0;       // the peer's port on the same link
  uint16_t local = 0;      // index among the owner's ports
  uint8_t link_class = 0;  // index into Network::link_classes() (owner tier -> peer tier)
  bool tx_pending = false; // a transmit-done event is scheduled
  uint8_t paused = 0;      // bit c: the peer paused class c
  uint8_t backlog = 0;     // bit c: queue[c] holds packets; bit 7: mac does
  bool up = true;          // the link carries frames (LinkEvent)
  Rate rate;
  Time delay;
  Time busy_until;         // end of the packet on the wire now
  uint64_t queued_bytes = 0;
  uint64_t tx_bytes = 0;   // every byte sent, for INT and utilisation
  uint64_t tx_data_bytes = 0;           // data packets only
  uint32_t ecn_kmin = 0, ecn_kmax = 0;  // bytes
  float ecn_pmax = 0;
  float loss = 0;          // probability that a frame sent on this wire is lost
  PacketList pipe;                 // on the wire; Packet::next_at chains the arrival times
  PacketList queue[kClasses];      // switch: egress queues; host: class 0 only
  PacketList mac;                  // PFC frames
  // Switch, for TiTa: utilisation measured at this port (EWMA over the base RTT).
  double util = 0;
  Time util_at;
  uint64_t util_bytes = 0;
  Time wake_at = Time::infinite();  // host: pacing wake-up scheduled for then
  // Host: flows leaving on this port, served round robin.
  std::vector<uint32_t> active;
  uint32_t rr = 0;

  uint64_t window_tx_bytes = 0;         // tx_bytes at the end of the traffic window
  Time paused_since[kClasses];
  Time paused_total;
};

}  // namespace xm::sim
