// Rails: the NICs a rank sends through, one address each, with their speeds.
//   XCCL_RAILS="10.0.0.1@400,10.1.0.1@400"   (address[@Gbit/s], one per NIC; speed default 100)
//   XCCL_RAILS="10.0.0.1@400,10.1.0.1@400/spare"   (a spare carries nothing while a rail
//   that is not one is up: a rank that owns one NIC, falling back to a neighbour's)
// Connections are rail-affine: a rank's rail r talks only to a peer's rail r.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace xm::ccl {

// The byte stream to a peer, cut into stripes dealt over the rails (defaults of the settings).
constexpr size_t kDefaultStripeBytes = 256 << 10;  // XCCL_TCP_STRIPE_BYTES
constexpr size_t kDefaultWindowBytes = 8 << 20;    // XCCL_TCP_WINDOW_BYTES: how far a sender runs ahead of its peer

// Failover and failback thresholds (docs/xccl.md says how they were chosen).
struct RailPolicy {
  std::chrono::milliseconds stall{400};  // XCCL_RAIL_STALL_MS: unacknowledged this long while another rail is heard: dead
  std::chrono::milliseconds retry{250};  // XCCL_RAIL_RETRY_MS: first pause before reconnecting; doubles per recent failure
  std::chrono::milliseconds hold{1000};  // XCCL_RAIL_HOLD_MS: a reconnected rail's probation; doubles per recent failure
};

struct Rail {
  std::string host;   // address to bind and to be reached at
  uint16_t port = 0;  // listening port (0 until listening)
  double gbps = 100;
  bool spare = false;
};

// Parses XCCL_RAILS; an empty string gives one rail at `fallback_host`.
Result<std::vector<Rail>> parse_rails(const std::string& text, const std::string& fallback_host);

// XCCL_TCP_SOCKETS_PER_RAIL: each rail as `sockets` connections, each a share of its speed
// (rail r's j-th at r * sockets + j). Each is a 5-tuple of its own, which ECMP hashes
// onto a path of its own: one flow per rail can collide with another on one spine while
// others idle (the reason for NCCL_IB_QPS_PER_CONNECTION). Every rank of a job must use
// the same count: connections pair up by index. Errors beyond kMaxRails connections.
constexpr uint32_t kMaxSocketsPerRail = 16;
constexpr size_t kMaxRails = 64;
Result<std::vector<Rail>> with_sockets_per_rail(const std::vector<Rail>& rails, uint32_t sockets);

// "host:port@gbps,..." for the bootstrap blob, and back.
std::string encode_rails(const std::vector<Rail>& rails);
Result<std::vector<Rail>> decode_rails(const std::string& text);

}  // namespace xm::ccl
