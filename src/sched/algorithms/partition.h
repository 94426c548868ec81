// How algorithms cut a buffer: `parts` near-equal segments, each cut into the same
// number of slices (the pipelining grain), boundaries proportional so sizes differ by at
// most one element.
#pragma once

#include <algorithm>
#include <cstdint>

namespace xm::sched {

class Partition {
 public:
  Partition(uint64_t count, int parts, uint64_t chunk_elements)
      : count_(count), parts_(parts) {
    uint64_t largest = (count + parts - 1) / parts;
    slices_ = std::max<uint64_t>(1, (largest + chunk_elements - 1) / std::max<uint64_t>(1, chunk_elements));
  }
  int parts() const { return parts_; }
  uint64_t slices() const { return slices_; }
  uint64_t segment_begin(int k) const { return count_ * uint64_t(k) / uint64_t(parts_); }
  uint64_t segment_size(int k) const { return segment_begin(k + 1) - segment_begin(k); }
  uint64_t slice_begin(int k, uint64_t j) const {
    return segment_begin(k) + segment_size(k) * j / slices_;
  }
  uint64_t slice_size(int k, uint64_t j) const { return slice_begin(k, j + 1) - slice_begin(k, j); }
  // Offset of slice j inside its segment.
  uint64_t slice_offset(int k, uint64_t j) const { return slice_begin(k, j) - segment_begin(k); }
  // No slice is larger (sizes round down from the front: the last segment is the
  // largest, and its last slice), e.g. for a scratch slot any slice fits.
  uint64_t largest_slice() const { return (segment_size(parts_ - 1) + slices_ - 1) / slices_; }

 private:
  uint64_t count_;
  int parts_;
  uint64_t slices_;
};

inline int mod(int a, int n) { return ((a % n) + n) % n; }

// Schedules whose peers read scratch in place (two-shot, direct) stage slice after slice
// in a window of this many slots per peer, reused so the window stays in cache.
inline constexpr uint64_t kScratchSlots = 4;

}  // namespace xm::sched
