// The wire format of a multi-rail TCP link. Each rail carries frames: a fixed header,
// then (data frames) payload bytes that belong at `offset` of the link's byte stream.
// Because every stripe says where it goes, the receiver can take stripes from any rail
// in any order, and the sender can move a dead rail's stripes to the others; every
// frame also carries `ack`, how many stream bytes its sender has consumed, so the other
// end can release what it keeps for resending.
//
//   magic u16 'XF' | kind u8 | 0 u8 | len u32 | offset u64 | ack u64   (big-endian, 24 bytes)
//
// Data: len payload bytes at stream `offset`. Ack: only the ack. Heartbeat: nothing
// (it makes the rail's TCP acknowledge, proving the path). RailDown: the sender gave up
// rail `offset` in its connection generation `len`; the receiver drops it too.
#pragma once

#include <cstddef>
#include <cstdint>

#include "util/result.h"

namespace xm::ccl {

enum class FrameKind : uint8_t { kData = 1, kAck = 2, kHeartbeat = 3, kRailDown = 4 };

struct Frame {
  FrameKind kind = FrameKind::kData;
  uint32_t len = 0;
  uint64_t offset = 0;
  uint64_t ack = 0;
};

inline constexpr size_t kFrameHeader = 24;

// What a well-formed header can say, given the link it arrives on.
struct FrameLimits {
  uint32_t max_payload = 0;  // largest data frame the sender may cut
  size_t rails = 0;          // RailDown names one of these
};

void encode_frame(const Frame& f, std::byte out[kFrameHeader]);
// The header's fields, or an Error naming the one that is wrong.
Result<Frame> decode_frame(const std::byte in[kFrameHeader], const FrameLimits& limits);

}  // namespace xm::ccl
