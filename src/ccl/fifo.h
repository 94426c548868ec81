// A single-producer, single-consumer byte FIFO over memory the caller provides: the
// heap for ranks that are threads, a shared mapping for ranks that are processes.
//
// Exactly one thread writes and one thread reads; neither blocks. The header and the
// data live in one block of kFifoHeader + capacity bytes, so the same bytes work from
// two address spaces.
#pragma once

#include <algorithm>
#include <cassert>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <span>

namespace xm::ccl {

struct FifoHeader {
  alignas(64) std::atomic<uint64_t> head{0};  // bytes ever written (producer's)
  alignas(64) std::atomic<uint64_t> tail{0};  // bytes ever read (consumer's)
  alignas(64) std::atomic<uint32_t> closed{0};
  alignas(64) std::atomic<uint64_t> acked{0};  // zero-copy bytes the consumer has used
};
inline constexpr size_t kFifoHeader = sizeof(FifoHeader);
static_assert(std::atomic<uint64_t>::is_always_lock_free, "FIFO needs lock-free 64-bit atomics across processes");

class ByteFifo {
 public:
  ByteFifo() = default;
  // `memory` holds kFifoHeader + capacity bytes; capacity a power of two. `init`
  // constructs the header (once, by whoever creates the memory).
  ByteFifo(void* memory, size_t capacity, bool init)
      : header_(init ? new (memory) FifoHeader : static_cast<FifoHeader*>(memory)),
        data_(static_cast<std::byte*>(memory) + kFifoHeader),
        mask_(capacity - 1) {
    assert(capacity >= 8 && (capacity & (capacity - 1)) == 0 && "FIFO capacity must be a power of two");
  }

  // Producer: copies up to `bytes`; returns how many fit.
  size_t write(const std::byte* src, size_t bytes) {
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    size_t free_bytes = mask_ + 1 - size_t(head - tail);
    size_t n = std::min(bytes, free_bytes), at = size_t(head & mask_);
    if (n == 0) return 0;  // (src may be null for an empty buffer)
    size_t first = std::min(n, mask_ + 1 - at);
    std::memcpy(data_ + at, src, first);
    std::memcpy(data_, src + first, n - first);
    header_->head.store(head + n, std::memory_order_release);
    return n;
  }

  // Consumer: the contiguous bytes that can be read now (maybe not all that arrived).
  std::span<const std::byte> readable() const {
    uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    uint64_t head = header_->head.load(std::memory_order_acquire);
    size_t at = size_t(tail & mask_);
    if (head - tail > mask_ + 1) return {};  // a corrupt count (available() says so): nothing to trust
    return {data_ + at, std::min(size_t(head - tail), mask_ + 1 - at)};
  }
  // Consumer: bytes written and not yet read; more than the capacity only if the
  // producer's count is corrupt (a peer process writes the header too).
  uint64_t available() const {
    return header_->head.load(std::memory_order_acquire) - header_->tail.load(std::memory_order_relaxed);
  }
  void consume(size_t bytes) {
    header_->tail.store(header_->tail.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }

  // Producer, zero-copy: the contiguous free space, then how much of it was filled.
  std::span<std::byte> writable() const {
    uint64_t head = header_->head.load(std::memory_order_relaxed);
    uint64_t tail = header_->tail.load(std::memory_order_acquire);
    size_t at = size_t(head & mask_);
    return {data_ + at, std::min(mask_ + 1 - size_t(head - tail), mask_ + 1 - at)};
  }
  // Producer: bytes from the write position to the end of the buffer.
  size_t until_end() const { return mask_ + 1 - size_t(header_->head.load(std::memory_order_relaxed) & mask_); }
  void commit(size_t bytes) {
    header_->head.store(header_->head.load(std::memory_order_relaxed) + bytes, std::memory_order_release);
  }

  size_t capacity() const { return mask_ + 1; }
  // Producer: free bytes; and an all-or-nothing write for small control records.
  size_t free_space() const {
    return mask_ + 1 - size_t(header_->head.load(std::memory_order_relaxed) - header_->tail.load(std::memory_order_acquire));
  }
  bool write_all(const void* src, size_t bytes) {
    if (free_space() < bytes) return false;
    write(static_cast<const std::byte*>(src), bytes);
    return true;
  }
  // Consumer: copies the next `bytes` (across the wrap) if they have all arrived.
  bool peek_exact(void* dst, size_t bytes) const {
    uint64_t tail = header_->tail.load(std::memory_order_relaxed);
    if (header_->head.load(std::memory_order_acquire) - tail < bytes) return false;
    size_t at = size_t(tail & mask_), first = std::min(bytes, mask_ + 1 - at);
    std::memcpy(dst, data_ + at, first);
    std::memcpy(static_cast<std::byte*>(dst) + first, data_, bytes - first);
    return true;
  }
  // Zero-copy acknowledgements: the consumer counts bytes it used in place.
  void ack(uint64_t bytes) { header_->acked.fetch_add(bytes, std::memory_order_release); }
  uint64_t acked() const { return header_->acked.load(std::memory_order_acquire); }

  void close() { header_->closed.store(1, std::memory_order_release); }
  bool closed() const { return header_->closed.load(std::memory_order_acquire) != 0; }

 private:
  FifoHeader* header_ = nullptr;
  std::byte* data_ = nullptr;
  size_t mask_ = 0;
};

}  // namespace xm::ccl
