// Direct all-gather, for ranks that all share memory: every rank offers its own block
// to every peer at once, and takes every peer's block from where it lies.
//
// The ring passes each block through n-1 ranks, one hop after another: n-1 hand-offs,
// each needing the next rank on a core, and every block written into a FIFO and read
// out of it at every hop. Here a block is staged once into scratch the peers read in
// place (the gather phase of two-shot all-reduce): one hand-off, and per rank one copy
// in, n-1 copies out and its own block copied home — at 4 ranks 5 block copies where
// the ring makes 7.
//
// Scratch is a window of kScratchSlots slices reused slice after slice, so it stays in
// cache however large the block; a slot is free once every peer read it (its sends
// complete). Blocks whose slices would go through the FIFOs anyway (under the
// descriptor size) are sent straight from the input: staging them would only add a copy.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule direct_allgather(const CollectiveArgs& a) {
  if (a.ranks == 1) return ring_allgather(a);  // a local copy at most
  Schedule s;
  s.algorithm = "direct";
  s.output_write_only = true;  // sends read the input or scratch
  const int n = a.ranks, r = a.rank;
  const uint64_t block = a.count;
  Partition p(block, 1, a.chunk_bytes / size_of(a.type));
  const uint64_t S = p.slices();
  const bool staged = p.slice_size(0, 0) * size_of(a.type) >= kZeroCopyMinBytes;
  auto own = [&](uint64_t j) { return Region{Buffer::kInput, p.slice_begin(0, j)}; };
  auto home = [&](int q, uint64_t j) { return Region{Buffer::kOutput, uint64_t(q) * block + p.slice_begin(0, j)}; };

  const uint64_t slots = std::min(S, kScratchSlots), slot_elements = p.largest_slice();
  if (staged) {
    s.scratch_shared = true;
    s.scratch_elements = slots * slot_elements;
  }
  auto slot = [&](uint64_t j) { return Region{Buffer::kScratch, (j % slots) * slot_elements}; };

  std::vector<After> read(S);  // what must complete before slice j's slot is free again
  for (uint64_t j = 0; j < S; ++j) {
    const uint64_t len = p.slice_size(0, j);
    Region from = own(j);
    uint32_t ready = kNoStep;
    if (staged) {
      ready = s.add(copy_step(len, own(j), slot(j), j >= slots ? read[j - slots] : After{}));
      from = slot(j);
    }
    // Each rank starts with its right neighbour, so the ranks do not all read one peer first.
    for (int k = 1; k < n; ++k) read[j].push_back(s.add(send_step(mod(r + k, n), len, from, after_step(ready))));
    if (!a.in_place) read[j].push_back(s.add(copy_step(len, from, home(r, j), after_step(ready))));
    for (int k = 1; k < n; ++k) {
      int q = mod(r - k, n);
      s.add(recv_step(q, len, home(q, j)));
    }
  }
  return s;
}

}  // namespace xm::sched
