// libFuzzer harness for what an authenticated peer can send on a multi-rail TCP link: the
// frame header parser (frame.h) and a live TcpLink reading two rails (socket pairs).
//
// The first input byte picks the mode.
//   Raw (even): the rest is split between the two rails as they arrive: whatever it says,
//   the link never crashes or reads past a buffer, and once it reports an error the error
//   names the rail; it never delivers more than the window.
//   Honest (odd): the rest describes a stream — its length, which rail carries each stripe,
//   and edits (position, xor) to the bytes on the wire. Without an effective edit the link
//   must deliver the stream exactly (then report that the peer left, every rail ended); with one it must fail cleanly or deliver a stream of
//   the right length (a changed payload byte is TCP's to catch, not ours).
// Every header decoded is also re-encoded: decode then encode gives the same 24 bytes.
//
//   cmake --preset asan && cmake --build --preset asan
//   build/asan/fuzz/frame_fuzz -max_total_time=600 fuzz/frame_corpus
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ccl/tcp/frame.h"
#include "ccl/tcp/tcp_transport.h"

namespace {

using namespace xm::ccl;

constexpr size_t kStripe = 1024, kWindow = 8192;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "frame_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

std::byte pattern(size_t i) { return std::byte(uint8_t(i * 29 + 7)); }

void check_header_round_trip(const uint8_t* data, size_t size) {
  if (size < kFrameHeader) return;
  auto in = reinterpret_cast<const std::byte*>(data);
  xm::Result<Frame> f = decode_frame(in, FrameLimits{uint32_t(kStripe), 2});
  if (!f) return;
  std::byte out[kFrameHeader];
  encode_frame(*f, out);
  require(std::memcmp(in, out, kFrameHeader) == 0, "decode then encode changes the header");
}

// Feeds the two rails' bytes to a link and drains what it delivers.
struct Feed {
  std::vector<uint8_t> wire[2];
  std::vector<std::byte> delivered;
  xm::Status status;

  void run() {
    int pairs[2][2];
    std::vector<xm::ccl::net::Fd> mine;
    for (auto& p : pairs) {
      require(::socketpair(AF_UNIX, SOCK_STREAM, 0, p) == 0, "socketpair");
      mine.emplace_back(p[0]);
    }
    TcpLink link(0, 1, std::move(mine), {1, 1}, {}, kStripe, kWindow);
    for (int r = 0; r < 2; ++r) {
      // (The input is short: it fits the socket buffer at once.)
      if (!wire[r].empty()) require(::write(pairs[r][1], wire[r].data(), wire[r].size()) == ssize_t(wire[r].size()), "write");
      ::shutdown(pairs[r][1], SHUT_WR);
    }
    for (int pass = 0; pass < 64 && link.status().ok(); ++pass) {
      link.progress();
      auto view = link.readable();
      delivered.insert(delivered.end(), view.begin(), view.end());
      link.consume(view.size());
    }
    status = link.status();
    for (auto& p : pairs) ::close(p[1]);
  }
};

void raw(const uint8_t* data, size_t size) {
  Feed feed;
  for (size_t i = 0; i < size; ++i) feed.wire[(i / 32) % 2].push_back(data[i]);  // 32-byte runs, alternating
  feed.run();
  require(feed.delivered.size() <= size, "delivered more than arrived");
  if (!feed.status.ok()) require(feed.status.message().rfind("rank 1: ", 0) == 0, "error without the peer's name");
}

void honest(const uint8_t* data, size_t size) {
  if (size < 2) return;
  size_t length = 1 + (size_t(data[0]) << 8 | data[1]) % kWindow;
  data += 2, size -= 2;
  Feed feed;
  size_t k = 0;
  for (size_t at = 0; at < length; at += kStripe, ++k) {
    size_t len = std::min(kStripe, length - at);
    int rail = k < size * 8 ? (data[k / 8] >> (k % 8)) & 1 : int(k % 2);
    std::byte header[kFrameHeader];
    encode_frame(Frame{FrameKind::kData, uint32_t(len), at, 0}, header);
    auto h = reinterpret_cast<const uint8_t*>(header);
    feed.wire[rail].insert(feed.wire[rail].end(), h, h + kFrameHeader);
    for (size_t i = 0; i < len; ++i) feed.wire[rail].push_back(uint8_t(pattern(at + i)));
  }
  // Edits after the rail bits: (rail+position hi, position lo, xor) triples.
  bool edited = false;
  for (size_t e = (k + 7) / 8; e + 3 <= size; e += 3) {
    std::vector<uint8_t>& w = feed.wire[data[e] & 1];
    size_t pos = (size_t(data[e] >> 1) << 8 | data[e + 1]);
    if (pos < w.size() && data[e + 2] != 0) w[pos] ^= data[e + 2], edited = true;
  }
  feed.run();
  // Once every rail has ended and everything is delivered the link says the peer left.
  bool only_left = feed.status.ok() || feed.status.message().find("closed the connection on every rail") != std::string::npos;
  if (!edited) {
    require(only_left, "an honest stream failed");
    require(feed.delivered.size() == length, "an honest stream lost or gained bytes");
    for (size_t i = 0; i < length; ++i) require(feed.delivered[i] == pattern(i), "an honest stream changed");
  } else if (only_left) {
    require(feed.delivered.size() <= length, "an edited stream grew");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  check_header_round_trip(data + 1, size - 1);
  if (data[0] % 2 == 0) raw(data + 1, size - 1);
  else honest(data + 1, size - 1);
  return 0;
}
