// Ring reduce-scatter, pipelined: partial sums travel the ring and end, complete, at
// the rank that owns the block. Partials alternate between two scratch segments.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule ring_reduce_scatter(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "ring";
  const int n = a.ranks, r = a.rank, right = mod(r + 1, n), left = mod(r - 1, n);
  const uint64_t block = a.count;
  if (n == 1) {
    if (!a.in_place) s.add(copy_step(block, {Buffer::kInput, 0}, {Buffer::kOutput, 0}));
    return s;
  }
  Partition p(block, 1, a.chunk_bytes / size_of(a.type));
  s.scratch_elements = 2 * block;
  std::vector<uint32_t> produced(p.slices(), kNoStep), sent(p.slices(), kNoStep);
  // Step t: send the partial of block r-t-1 (the input itself at t = 0), receive the
  // partial of block r-t-2 and add this rank's input; the last step's block is r.
  for (int t = 0; t + 1 < n; ++t) {
    uint64_t give = uint64_t(mod(r - t - 1, n)) * block, take = uint64_t(mod(r - t - 2, n)) * block;
    bool last_step = t == n - 2;
    for (uint64_t j = 0; j < p.slices(); ++j) {
      uint64_t off = p.slice_begin(0, j), len = p.slice_size(0, j);
      Region from = t == 0 ? Region{Buffer::kInput, give + off} : Region{Buffer::kScratch, uint64_t((t - 1) % 2) * block + off};
      uint32_t this_send = s.add(send_step(right, len, from, after_step(produced[j])));
      Region into = last_step ? Region{Buffer::kOutput, off} : Region{Buffer::kScratch, uint64_t(t % 2) * block + off};
      // scratch[t % 2] was last read by the previous step's send: wait for it.
      produced[j] = s.add(reduce_step(left, len, {Buffer::kInput, take + off}, into, last_step, after_step(sent[j])));
      sent[j] = this_send;
    }
  }
  return s;
}

}  // namespace xm::sched
