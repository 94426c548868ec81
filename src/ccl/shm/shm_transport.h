// Shared memory between ranks on one host (the NVLink role): each rank owns one
// segment holding a FIFO from every peer; a peer writes straight into it and the
// owner reduces or copies straight out of it — one copy each way, no socket.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ccl/link.h"
#include "ccl/shm/registered_memory.h"
#include "util/result.h"

namespace xm::ccl {

// The FIFO per local peer when XCCL_SHM_FIFO_BYTES does not say: the host's n(n-1)
// FIFOs together stay within about what two cores' L2 caches hold (8 MiB), so bytes
// in flight are written into lines still in cache rather than into lines the FIFO
// walked past megabytes ago. Measured (alternating, 4 ranks, 1-64 MiB): a 512 KiB FIFO
// runs all-to-all 1.2-1.8x and all-gather up to 1.6x the 4 MiB one; with 2 ranks the
// 4 MiB FIFO stays (it is 15-20 % ahead at 16-64 MiB: a sender runs further ahead).
// A power of two from 256 KiB (n >= 5) to 4 MiB (n = 2).
size_t default_fifo_bytes(int local_ranks);

// Sends the receiver only copies go by descriptor, for it to copy them out of the
// sender itself (cross-memory attach), from this size. Below it the FIFO's two copies,
// made side by side by the two ends, beat one kernel copy and its system call. Measured
// in one launch, two communicators alternating: 2 ranks, 16 KiB blocks 1.2x faster
// through the FIFO, 32 KiB ones 1.1-1.2x faster pulled; 4 ranks on 2 cores level at
// 32 KiB.
inline constexpr size_t kPullMinBytes = 32 << 10;

// What a segment's owner publishes to the ranks that map it, at the segment's start.
struct SegmentHeader {
  std::atomic<int32_t> cpu{-1};  // the CPU the owner last waited on (cpu_spread.h)
};

class ShmSegment {
 public:
  // Creates this rank's segment for `ranks` incoming FIFOs of `fifo_bytes` (a power of two).
  static Result<std::unique_ptr<ShmSegment>> create(int ranks, size_t fifo_bytes);
  // Maps a peer's segment by name.
  static Result<std::unique_ptr<ShmSegment>> open(const std::string& name, int ranks, size_t fifo_bytes);
  ~ShmSegment();

  const std::string& name() const { return name_; }
  // Removes the name (mappings stay valid); call once every peer has mapped it.
  void unlink();
  // The FIFO that carries bytes from rank `from` into this segment's owner.
  ByteFifo fifo_from(int from) const;
  SegmentHeader& header() const { return *static_cast<SegmentHeader*>(base_); }

 private:
  ShmSegment() = default;
  std::byte* fifo_memory(int from) const;
  std::string name_;
  void* base_ = nullptr;
  size_t bytes_ = 0, fifo_bytes_ = 0;
  bool owner_ = false, linked_ = false;
};

// A link to a peer on this host: writes into the peer's segment, reads from ours. The
// FIFO carries frames: data (copied in, copied out: one copy each way; a relay writes
// them in place with reserve/commit), or, for large sends, a descriptor of the bytes
// where they lie, which the receiver reads itself — in place when they are in
// registered memory (xcclMemAlloc), by cross-memory attach (cross_memory.h) when they
// are plain memory and the peer can read ours. A send by descriptor completes when the
// receiver has acknowledged every byte. Reports the peer's death (its pid gone) instead
// of waiting for the executor's timeout.
class ShmLink final : public Link {
 public:
  // `peer_reads_our_memory` (probed): sends the receiver only copies (send_pulled) of
  // kPullMinBytes or more of plain memory go by descriptor, for the peer to read itself.
  ShmLink(ByteFifo out, ByteFifo in, pid_t peer_pid, bool peer_reads_our_memory = false)
      : out_(out), in_(in), peer_pid_(peer_pid), peer_reads_our_memory_(peer_reads_our_memory) {}
  size_t send_some(const std::byte* data, size_t bytes) override { return send(data, bytes, false); }
  size_t send_copy(const std::byte* data, size_t bytes) override;
  size_t send_pulled(const std::byte* data, size_t bytes) override { return send(data, bytes, true); }
  std::span<const std::byte> readable() override;
  void consume(size_t bytes) override;
  size_t receive_into(std::byte* dst, size_t bytes) override;
  bool in_memory() const override { return true; }
  std::span<std::byte> reserve(size_t bytes) override;
  void commit(size_t bytes) override;
  Status status() const override;
  void close() override { out_.close(); }

 private:
  // By descriptor when it pays: registered memory; plain memory if `pulled` (and large
  // enough). Else copied.
  size_t send(const std::byte* data, size_t bytes, bool pulled);
  bool next_frame();        // reads the next frame's header once it is all there
  bool fifo_corrupt();      // the peer's byte count is impossible: fails the link
  bool fill_bounce();       // kRemote: copies the next piece into bounce_
  size_t post(const void* frame, size_t frame_bytes, uint64_t bytes);

  ByteFifo out_, in_;
  pid_t peer_pid_;
  bool peer_reads_our_memory_;
  // Sending: the descriptor the peer is reading, if any.
  uint64_t posted_bytes_ = 0, posted_returned_ = 0, ack_base_ = 0;
  std::byte* reserved_ = nullptr;  // the header slot of the frame reserve() set up
  // Receiving: the frame being read.
  enum class Frame : uint8_t { kNone, kData, kDescriptor, kRemote };
  Frame frame_ = Frame::kNone;
  uint64_t frame_left_ = 0;  // bytes of the frame not yet consumed
  uint32_t pad_ = 0;  // zeros to skip after the current data frame
  const std::byte* in_place_ = nullptr;  // kDescriptor: the next byte, in the peer's buffer
  uint64_t remote_next_ = 0;             // kRemote: the next byte not yet copied, in the peer
  // kRemote, read through readable() (reductions, relays): the piece copied out of the
  // peer and not yet consumed, [bounce_at_, bounce_end_) of bounce_.
  std::vector<std::byte> bounce_;
  size_t bounce_at_ = 0, bounce_end_ = 0;
  // receive_into() found no frame: a copying step asks readable() next, and a kRemote
  // frame that arrived in between is left for its next receive_into() (one copy, into
  // place) rather than copied through bounce_ (two, and the first fill faults it in:
  // ~100 us in a 6 us call).
  bool copier_waiting_ = false;
  PeerMemory peer_memory_;
  Status protocol_;
  mutable std::chrono::steady_clock::time_point next_check_{};
  mutable bool peer_gone_ = false;
};

}  // namespace xm::ccl
