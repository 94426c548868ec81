// Every knob of the simulated network in one place, with the defaults of the HPCC
// simulator (notes: docs/simulator.md lists each with its source).
#pragma once

#include <cstdint>

#include "sim/shared_buffer.h"
#include "sim/units.h"

namespace xm::sim {

enum class LoadBalancing : uint8_t {
  kEcmp,   // per flow: hash of the 5-tuple, seeded per switch
  kSpray,  // per packet: a different hash for every packet (receivers must not NACK reordering)
};

struct EcnConfig {
  // RED on the egress queue, as a function of the port speed: thresholds scale with it.
  double kmin_kb_per_25g = 100;  // KB (1000 B) at 25 Gbit/s: 400 KB at 100 G
  double kmax_kb_per_25g = 400;
  double pmax = 0.2;
};

struct NetConfig {
  // Packet sizes. A data packet is payload + headers (Ethernet 14, IPv4 20, UDP 8, BTH
  // 12, ICRC 4, FCS 4) + preamble and inter-frame gap (20); an ACK is a minimum frame.
  uint32_t mtu_payload = 1000;
  uint32_t header_bytes = 62;
  uint32_t wire_gap_bytes = 20;
  uint32_t ack_frame_bytes = 64;
  uint32_t pfc_frame_bytes = 64;

  bool pfc = true;
  bool ecn = true;  // switches mark; only algorithms that read ECN get CNPs
  EcnConfig ecn_thresholds;
  LoadBalancing load_balancing = LoadBalancing::kEcmp;

  // Switch buffer: `buffer_mb` per switch, or 0 for the HPCC rule 16 MB × host Gbit/s / 50.
  double buffer_mb = 0;
  uint32_t reserve_bytes = 4096;
  uint32_t resume_offset_bytes = 3072;
  double headroom_rtts = 3;     // PFC headroom = this × port rate × link delay
  uint32_t pfc_shift = 3;       // dynamic threshold 2^-3 of the free pool at host speed
  uint32_t egress_shift = 1;    // lossy mode only

  // NIC.
  uint32_t ack_every = 1;             // packets per ACK (ACK coalescing); 1 = per packet
  Time nack_interval = Time::us(500); // at most one NACK per expected sequence per interval
  Time cnp_interval = Time();         // least time between CNPs of one flow (0: every marked packet)
  Time rto = Time::ms(1);             // go back to the last ACK when nothing was acked for this long
  bool ooo_receiver = false;          // accept out-of-order packets (needed with spraying)
};

}  // namespace xm::sim
