#include "ccl/tcp/frame.h"

#include <cstring>
#include <string>

namespace xm::ccl {
namespace {

constexpr uint16_t kMagic = 0x5846;  // "XF"

void put(std::byte* at, uint64_t v, int bytes) {
  for (int i = bytes - 1; i >= 0; --i, v >>= 8) at[i] = std::byte(v & 0xff);
}
uint64_t get(const std::byte* at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = v << 8 | uint64_t(at[i]);
  return v;
}

}  // namespace

void encode_frame(const Frame& f, std::byte out[kFrameHeader]) {
  put(out, kMagic, 2);
  out[2] = std::byte(f.kind);
  out[3] = std::byte{0};
  put(out + 4, f.len, 4);
  put(out + 8, f.offset, 8);
  put(out + 16, f.ack, 8);
}

Result<Frame> decode_frame(const std::byte in[kFrameHeader], const FrameLimits& limits) {
  if (get(in, 2) != kMagic) return Error{"frame header: bad magic (stream out of step)"};
  if (in[3] != std::byte{0}) return Error{"frame header: reserved byte set"};
  Frame f;
  f.kind = FrameKind(in[2]);
  f.len = uint32_t(get(in + 4, 4));
  f.offset = get(in + 8, 8);
  f.ack = get(in + 16, 8);
  switch (f.kind) {
    case FrameKind::kData:
      if (f.len == 0 || f.len > limits.max_payload)
        return Error{"data frame: length " + std::to_string(f.len) + " outside 1.." + std::to_string(limits.max_payload)};
      if (f.offset + f.len < f.offset) return Error{"data frame: offset " + std::to_string(f.offset) + " wraps"};
      return f;
    case FrameKind::kAck:
    case FrameKind::kHeartbeat:
      if (f.len != 0 || f.offset != 0) return Error{"control frame: length or offset set"};
      return f;
    case FrameKind::kRailDown:
      if (f.offset >= limits.rails)
        return Error{"rail-down frame: rail " + std::to_string(f.offset) + " of " + std::to_string(limits.rails)};
      return f;
  }
  return Error{"frame header: unknown kind " + std::to_string(int(in[2]))};
}

}  // namespace xm::ccl
