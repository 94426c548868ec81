// libFuzzer harness for what a peer process on this host can put in the shared-memory FIFO
// it writes to us: the frames a ShmLink reads (data, skip, descriptor, cross-memory) and
// the FIFO's own byte count, which lives in the shared segment too.
//
// The first input byte picks the mode.
//   Raw (even): the rest goes into the FIFO as the peer's bytes, a piece at a time, with
//   the reader draining between pieces; bit 1 of the mode byte then corrupts the
//   producer's count. Whatever it says, the reader never crashes or reads outside the
//   FIFO, and a failed link says what was wrong (a count past the FIFO's end fails it:
//   shm_link_test).
//   Honest (odd): the rest describes a stream written by a real ShmLink — its length, how
//   it is cut, which pieces are written in place (reserve/commit, with skip frames at the
//   FIFO's end) — and edits (position, xor) to the FIFO's bytes before they are read.
//   Without an effective edit the stream arrives exactly; with one the reader fails
//   cleanly or delivers bytes, never crashes.
//
//   cmake --preset asan && cmake --build --preset asan
//   build/asan/fuzz/shm_frame_fuzz -max_total_time=600 fuzz/shm_frame_corpus
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ccl/fifo.h"
#include "ccl/shm/shm_transport.h"

namespace {

using namespace xm::ccl;

constexpr size_t kFifo = 4096;  // small: raw input wraps it; an honest stream fits 4x
constexpr size_t kHonestFifo = 64 << 10, kMaxStream = 16 << 10;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "shm_frame_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

std::byte pattern(size_t i) { return std::byte(uint8_t(i * 29 + 7)); }

// A FIFO in heap memory standing in for the shared segment, and the reader's link.
struct Reader {
  explicit Reader(size_t capacity)
      : memory(kFifoHeader + capacity), back_memory(kFifoHeader + kFifo), fifo(memory.data(), capacity, true),
        back(back_memory.data(), kFifo, true), link(back, fifo, ::getpid()) {}
  std::vector<std::byte> memory, back_memory;
  ByteFifo fifo, back;  // theirs to us, ours to them
  ShmLink link;
  std::vector<std::byte> delivered;

  // Drains what the link delivers, by both reading paths, a bounded number of times.
  void drain(int passes) {
    std::vector<std::byte> into(64 << 10);
    for (int pass = 0; pass < passes && link.status().ok(); ++pass) {
      if (size_t n = link.receive_into(into.data(), into.size()); n > 0) {
        delivered.insert(delivered.end(), into.begin(), into.begin() + ptrdiff_t(n));
        continue;
      }
      auto view = link.readable();
      if (view.empty()) continue;
      delivered.insert(delivered.end(), view.begin(), view.end());
      link.consume(view.size());
    }
    if (!link.status().ok()) require(!link.status().message().empty(), "an error without a message");
  }
};

void raw(uint8_t mode, const uint8_t* data, size_t size) {
  Reader r(kFifo);
  auto* header = static_cast<FifoHeader*>(static_cast<void*>(r.memory.data()));
  for (size_t at = 0; at < size && r.link.status().ok();) {
    size_t piece = std::min<size_t>(size - at, 8 + data[at] % 200);
    size_t n = r.fifo.write(reinterpret_cast<const std::byte*>(data + at), piece);
    at += n;
    r.drain(4);
    if (n == 0) break;  // the reader is stuck on a frame that never completes: fine, the executor's timeout ends it
  }
  if (mode & 2) {  // the peer's count, corrupt
    uint64_t bogus = 0;
    std::memcpy(&bogus, data, std::min<size_t>(size, 8));
    header->head.store(header->tail.load() + kFifo + 1 + bogus % (1u << 20));
    r.drain(4);  // (in the middle of a cross-memory frame the FIFO is not looked at: no verdict here)
  }
}

void honest(const uint8_t* data, size_t size) {
  if (size < 2) return;
  size_t length = 1 + (size_t(data[0]) << 8 | data[1]) % kMaxStream;
  data += 2, size -= 2;
  std::vector<std::byte> stream(length);
  for (size_t i = 0; i < length; ++i) stream[i] = pattern(i);
  Reader r(kHonestFifo);
  // Start where the stream wraps the FIFO: frames written in place then need skip frames.
  size_t start = (size > 0 ? data[0] : 0) * 64 * 4 % kHonestFifo;
  auto* header = static_cast<FifoHeader*>(static_cast<void*>(r.memory.data()));
  header->head.store(start), header->tail.store(start);
  // The writer: a link writing into the reader's FIFO (and reading nothing back).
  std::vector<std::byte> unused_memory(kFifoHeader + kFifo);
  ByteFifo unused(unused_memory.data(), kFifo, true);
  ShmLink writer(r.fifo, unused, ::getpid());
  size_t k = 1, sent = 0;
  for (; sent < length; ++k) {
    uint8_t d = k < size ? data[k] : uint8_t(k * 37);
    size_t want = std::min(length - sent, size_t(1 + (d >> 1)) * 64);
    size_t n = 0;
    if (d & 1) {
      std::span<std::byte> room = writer.reserve(want);
      n = std::min(room.size(), want);
      if (n > 0) {
        std::memcpy(room.data(), stream.data() + sent, n);
        writer.commit(n);
      }
    } else {
      n = writer.send_copy(stream.data() + sent, want);
    }
    require(n > 0, "an honest writer found no room in a FIFO four times the stream");
    sent += n;
  }
  // Edits after the cut bytes: (position hi, position lo, xor) triples within what was written.
  bool edited = false;
  size_t written = size_t(r.fifo.available());
  for (size_t e = k; e + 3 <= size; e += 3) {
    size_t pos = (size_t(data[e]) << 8 | data[e + 1]) % (written + 1);
    if (pos < written && data[e + 2] != 0) {
      r.memory[kFifoHeader + (start + pos) % kHonestFifo] ^= std::byte(data[e + 2]);
      edited = true;
    }
  }
  r.drain(256);
  if (!edited) {
    require(r.link.status().ok(), "an honest stream failed");
    require(r.delivered.size() == length, "an honest stream lost or gained bytes");
    require(std::memcmp(r.delivered.data(), stream.data(), length) == 0, "an honest stream changed");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  if (data[0] % 2 == 0) raw(data[0], data + 1, size - 1);
  else honest(data + 1, size - 1);
  return 0;
}
