#include "sim/config.h"

#include <cmath>

namespace xm::sim {

void apply_model(NetConfig& c, NetModel model) {
  c.model = model;
  if (model == NetModel::kXm) {
    const NetConfig ours;
    c.header_bytes = ours.header_bytes, c.wire_gap_bytes = ours.wire_gap_bytes;
    c.ack_frame_bytes = ours.ack_frame_bytes, c.pfc_frame_bytes = ours.pfc_frame_bytes;
    c.int_base_bytes = ours.int_base_bytes;
    c.headroom_rtts = ours.headroom_rtts, c.headroom_packets = ours.headroom_packets;
    c.nic_arbitration = ours.nic_arbitration;
    c.ack_high_prio = ours.ack_high_prio;
    return;
  }
  // The HPCC simulator (ns-3-alibabacloud, dev/qp): a 14-byte link header, IPv4, UDP and
  // a 10-byte sequence header ahead of the payload, no preamble or gap on its wires; an ACK
  // carries 16 bytes after IPv4, a PFC frame 9; INT is a 2-byte hop count and the hops.
  c.header_bytes = 14 + 20 + 8 + 10;
  c.wire_gap_bytes = 0;
  c.ack_frame_bytes = 14 + 20 + 16;
  c.pfc_frame_bytes = 14 + 20 + 9;
  c.int_base_bytes = 2;
  c.headroom_rtts = 2;  // its switches' headroom: 2 × rate × delay + 2 payloads
  c.headroom_packets = 2;
  c.nic_arbitration = NicArbitration::kTokenRounds;
  // Its switches queue ACKs with the data: SimAI's fork never hands ACK_HIGH_PRIO to them
  // (their attribute keeps its default, 0); the key sets only the NICs' ACK queue.
  c.ack_high_prio = false;
}

Status check_config(const NetConfig& config, const SimTopology& topology) {
  if (config.ecn_thresholds.by_rate.empty()) return Status::Ok();
  for (const SimLink& link : topology.links)
    if (!ecn_at_rate(config.ecn_thresholds, link.rate))
      return Error{"no ECN thresholds for links of " + std::to_string(std::lround(link.rate.gbps())) +
                   " Gbit/s (KMIN_MAP, KMAX_MAP and PMAX_MAP need every speed of the fabric)"};
  return Status::Ok();
}

const EcnAtRate* ecn_at_rate(const EcnConfig& ecn, Rate rate) {
  for (const EcnAtRate& at : ecn.by_rate)
    if (std::abs(at.gbps - rate.gbps()) < 1e-6 * at.gbps) return &at;
  return nullptr;
}

}  // namespace xm::sim
