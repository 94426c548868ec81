// Ring all-gather, pipelined: every rank forwards the block it received last.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule ring_allgather(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "ring";
  const int n = a.ranks, r = a.rank, right = mod(r + 1, n), left = mod(r - 1, n);
  const uint64_t block = a.count;
  // Own block into place (in place, it is already there).
  uint32_t own = a.in_place ? kNoStep : s.add(copy_step(block, {Buffer::kInput, 0}, {Buffer::kOutput, r * block}));
  if (n == 1) return s;
  // Slices let a block flow on from hop to hop; between two ranks there is one hop, and
  // each slice is one more hand-off (2 ranks, pulled: one slice 1.2-1.3x four at 256 KiB
  // and 1 MiB, measured with bench/settings_ab).
  Partition p(block, 1, n == 2 ? std::max<uint64_t>(block, 1) : a.chunk_bytes / size_of(a.type));
  std::vector<uint32_t> last(p.slices(), own);
  // Step t: send block r-t, receive block r-t-1. Out of place the own block goes from
  // the input, so it need not wait for the copy home (nor be read back from lines just
  // written); in place it is already home (and phases placed in place have no input).
  for (int t = 0; t + 1 < n; ++t) {
    uint64_t give = uint64_t(mod(r - t, n)) * block, take = uint64_t(mod(r - t - 1, n)) * block;
    for (uint64_t j = 0; j < p.slices(); ++j) {
      uint64_t off = p.slice_begin(0, j), len = p.slice_size(0, j);
      if (t == 0 && !a.in_place) s.add(pull_send_step(right, len, {Buffer::kInput, off}));
      else s.add(pull_send_step(right, len, {Buffer::kOutput, give + off}, after_step(last[j])));
      last[j] = s.add(recv_step(left, len, {Buffer::kOutput, take + off}));
    }
  }
  return s;
}

}  // namespace xm::sched
