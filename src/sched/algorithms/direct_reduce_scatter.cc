// Direct reduce-scatter, for ranks that all share memory: every rank offers block q of
// its input to rank q at once, and sums its own block straight out of what the peers
// offer (the staging and sum phases of two-shot all-reduce).
//
// The ring carries each partial sum through n-1 ranks, one hop after another: n-1
// hand-offs, each needing the next rank on a core. Here there is one: a rank stages
// what it can before anyone runs beside it, and a peer that runs late finds its data
// ready. It touches as many bytes as the ring (a copy in and a reduction out per block).
//
// Scratch is a window of kScratchSlots slices per peer, reused slice after slice, so it
// stays in cache however large the message; a slot is free once its reader is done (the
// send completes). Slices under the descriptor size would go through the FIFOs anyway:
// they are sent straight from the input, as staging them would only add a copy.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule direct_reduce_scatter(const CollectiveArgs& a) {
  if (a.ranks == 1) return ring_reduce_scatter(a);  // a local copy at most
  Schedule s;
  s.algorithm = "direct";
  const int n = a.ranks, r = a.rank;
  const uint64_t block = a.count;
  Partition p(block, 1, a.chunk_bytes / size_of(a.type));
  const uint64_t S = p.slices(), slots = std::min(S, kScratchSlots), slot_elements = p.largest_slice();
  const bool staged = p.slice_size(0, 0) * size_of(a.type) >= kZeroCopyMinBytes;
  if (staged) {
    s.scratch_shared = true;
    s.scratch_elements = uint64_t(n) * slots * slot_elements;
  }
  auto input = [&](int q, uint64_t j) { return Region{Buffer::kInput, uint64_t(q) * block + p.slice_begin(0, j)}; };
  auto output = [&](uint64_t j) { return Region{Buffer::kOutput, p.slice_begin(0, j)}; };
  auto slot = [&](int q, uint64_t j) { return Region{Buffer::kScratch, (uint64_t(q) * slots + j % slots) * slot_elements}; };

  std::vector<uint32_t> offered(uint64_t(n) * S, kNoStep);  // by (peer, slice)
  for (uint64_t j = 0; j < S; ++j) {
    const uint64_t len = p.slice_size(0, j);
    // Offer slice j of every peer's block, starting with the right neighbour so the
    // ranks do not all read one peer first; a slot is reused once rank q read it.
    for (int k = 1; k < n; ++k) {
      int q = mod(r + k, n);
      Region from = input(q, j);
      uint32_t ready = kNoStep;
      if (staged) {
        After free = j >= slots ? After{offered[q * S + j - slots]} : After{};
        ready = s.add(copy_step(len, from, slot(q, j), free));
        from = slot(q, j);
      }
      offered[q * S + j] = s.add(send_step(q, len, from, after_step(ready)));
    }
    // Sum slice j of this rank's block: its own input plus every peer's offer, read
    // where it lies, in the order the peers offer (from the left neighbour on).
    uint32_t last = kNoStep;
    for (int k = 1; k < n; ++k) {
      Region src = k == 1 ? input(r, j) : output(j);
      last = s.add(reduce_step(mod(r - k, n), len, src, output(j), k == n - 1, after_step(last)));
    }
  }
  return s;
}

}  // namespace xm::sched
