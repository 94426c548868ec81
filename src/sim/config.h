// Every knob of the simulated network in one place, with the defaults of the HPCC
// simulator (notes: docs/simulator.md lists each with its source).
#pragma once

#include <cstdint>
#include <vector>

#include "sim/shared_buffer.h"
#include "sim/topology.h"
#include "sim/units.h"
#include "util/result.h"

namespace xm::sim {

enum class LoadBalancing : uint8_t {
  kEcmp,   // per flow: hash of the 5-tuple, seeded per switch
  kSpray,  // per packet: a different hash for every packet (receivers must not NACK reordering)
};

// The thresholds of one port speed, as the HPCC simulator's KMIN_MAP, KMAX_MAP and
// PMAX_MAP give them.
struct EcnAtRate {
  double gbps = 0;
  double kmin_kb = 0, kmax_kb = 0;  // KB (1000 B)
  double pmax = 0;
};

struct EcnConfig {
  // RED on the egress queue, as a function of the port speed: thresholds scale with it.
  double kmin_kb_per_25g = 100;  // KB (1000 B) at 25 Gbit/s: 400 KB at 100 G
  double kmax_kb_per_25g = 400;
  double pmax = 0.2;
  // When not empty, each port takes the entry of its speed instead (every speed in the
  // fabric must have one).
  std::vector<EcnAtRate> by_rate;
};

// Whose modelling choices the network follows where simulators differ (docs/simulator.md,
// "HPCC-compatible mode"). Both keep every other knob as set.
enum class NetModel : uint8_t {
  kXm,    // ours: Ethernet framing on the wire, per-packet pacing, an exact idle FCT
  kHpcc,  // the HPCC simulator as SimAI ships it: its header sizes, the NIC's token
          // rounds, headroom 2 BDP + 2 packets, its base RTT and standalone FCT
};

// How a NIC picks the next data packet among its queue pairs.
enum class NicArbitration : uint8_t {
  kPacing,       // round robin per packet over flows whose pacing allows one now
  kTokenRounds,  // a token bucket per flow filled at its rate (at most 2 rounds); the flow
                 // last served keeps the wire while it has tokens for another packet, and
                 // the next in round robin needs a whole round (token_round_bytes)
};

struct NetConfig {
  // Packet sizes. A data packet is payload + headers (Ethernet 14, IPv4 20, UDP 8, BTH
  // 12, ICRC 4, FCS 4) + preamble and inter-frame gap (20); an ACK is a minimum frame.
  uint32_t mtu_payload = 1000;
  uint32_t header_bytes = 62;
  uint32_t wire_gap_bytes = 20;
  uint32_t ack_frame_bytes = 64;
  uint32_t pfc_frame_bytes = 64;
  uint32_t int_base_bytes = 4;  // an INT header before its 8-byte hops
  NetModel model = NetModel::kXm;

  bool pfc = true;
  bool ecn = true;  // switches mark; only algorithms that read ECN get CNPs
  EcnConfig ecn_thresholds;
  LoadBalancing load_balancing = LoadBalancing::kEcmp;

  // Switch buffer: `buffer_mb` per switch, or 0 for the HPCC rule 16 MB × host Gbit/s / 50.
  double buffer_mb = 0;
  uint32_t reserve_bytes = 4096;
  uint32_t resume_offset_bytes = 3072;
  double headroom_rtts = 3;     // PFC headroom = this × port rate × link delay
  double headroom_packets = 0;  //   + this × a full packet's payload
  uint32_t pfc_shift = 3;       // dynamic threshold 2^-3 of the free pool at host speed
  uint32_t egress_shift = 1;    // lossy mode only

  // NIC.
  uint32_t ack_every = 1;             // packets per ACK (ACK coalescing); 1 = per packet
  Time nack_interval = Time::us(500); // at most one NACK per expected sequence per interval
  Time cnp_interval = Time();         // least time between CNPs of one flow (0: every marked packet)
  Time rto = Time::ms(1);             // go back to the last ACK when nothing was acked for this long
  bool ooo_receiver = false;          // accept out-of-order packets (needed with spraying)
  NicArbitration nic_arbitration = NicArbitration::kPacing;
  uint32_t token_round_bytes = 4000;  // kTokenRounds: what a flow needs to start a turn
  // After a link goes down, up, is drained or restored, every switch's routes follow
  // this much later (failure detection and route update, as BFD and a routing protocol
  // would); until then a switch sends only on its own live ports.
  Time reroute_delay = Time::us(100);
  // Switches queue ACKs and NACKs in class 0, ahead of data and never paused; false: in
  // their flow's class, behind its data and paused with it.
  bool ack_high_prio = true;
  // The NIC sends its ACKs even while PFC pauses their flow's class. The HPCC simulator's
  // ACK_HIGH_PRIO sets this one only in SimAI's fork (its switches keep ACKs in the data
  // class whatever it says); in the HPCC code it set both.
  bool nic_ack_high_prio = true;
};

// Sets the knobs in which `model` differs from ours (header and frame sizes, headroom, the
// NIC's arbitration, the switches' ACK class) to that model's values; other fields keep
// theirs.
void apply_model(NetConfig& config, NetModel model);

// What a configuration needs of the fabric it runs on: ECN thresholds for each of its
// port speeds when they are given by rate.
Status check_config(const NetConfig& config, const SimTopology& topology);

// The entry of `rate` in `ecn.by_rate`, or null (then the per-25G scaling applies).
const EcnAtRate* ecn_at_rate(const EcnConfig& ecn, Rate rate);

}  // namespace xm::sim
