// Two-shot all-reduce, for ranks that all share memory: every rank stages its input in
// scratch the peers read in place, sums its own segment straight out of the peers'
// scratch, and every rank then copies the others' sums straight out of theirs.
//
// A ring passes each slice through every rank, one hop after another: 2(n-1) hand-offs,
// each needing the next rank on a core. When ranks outnumber cores (4 ranks on 2 here)
// those hand-offs wait for the scheduler. Two-shot has two: a rank stages everything
// before anyone needs to run beside it, and a peer that runs late finds its data ready.
// It touches about as many bytes as the relay ring (a copy in, n-1 reductions of one
// segment, a copy of the result, n-1 segments copied out).
//
// Scratch holds this rank's input segments for the peers (segment p for peer p) and its
// own segment's sum (segment r); the schedule asks for shared scratch, so a send from it
// is a descriptor and the receiver reads the bytes where they lie. Segments are cut into
// slices so the phases overlap.
#include "ccl/algorithms/algorithms.h"
#include "ccl/algorithms/partition.h"

namespace xm::ccl {

Schedule two_shot_allreduce(const CollectiveArgs& a) {
  if (a.ranks == 1) return ring_allreduce(a);  // a local copy at most
  Schedule s;
  s.algorithm = "two-shot";
  s.scratch_elements = a.count;
  s.scratch_shared = true;
  const int n = a.ranks, r = a.rank;
  Partition p(a.count, n, a.chunk_bytes / size_of(a.type));
  const uint64_t S = p.slices();
  auto region = [&](BufferId b, int seg, uint64_t j) { return Region{b, p.slice_begin(seg, j)}; };

  // Stage: segment q's slices go to scratch and are offered to rank q (each rank starts
  // with its right neighbour, so the ranks do not all read one peer first).
  std::vector<uint32_t> staged(size_t(n) * S, kNoStep);
  for (uint64_t j = 0; j < S; ++j)
    for (int k = 1; k < n; ++k) {
      int q = mod(r + k, n);
      staged[q * S + j] = s.add(copy_step(p.slice_size(q, j), region(Buffer::kInput, q, j), region(Buffer::kScratch, q, j)));
      s.add(send_step(q, p.slice_size(q, j), region(Buffer::kScratch, q, j), {staged[q * S + j]}));
    }
  // Reduce: segment r's slice j gathers every peer's part into scratch (the first from
  // this rank's input), then goes to the output; every peer will read it from scratch.
  std::vector<uint32_t> summed(S);
  for (uint64_t j = 0; j < S; ++j) {
    uint32_t last = kNoStep;
    for (int k = 1; k < n; ++k) {
      int from = mod(r - k, n);
      Region src = region(k == 1 ? Buffer::kInput : Buffer::kScratch, r, j);
      last = s.add(reduce_step(from, p.slice_size(r, j), src, region(Buffer::kScratch, r, j), k == n - 1, after_step(last)));
    }
    summed[j] = last;
    s.add(copy_step(p.slice_size(r, j), region(Buffer::kScratch, r, j), region(Buffer::kOutput, r, j), {last}));
  }
  // Gather: offer the sums to every peer; take theirs. (In place, the input is the
  // output: a receive into segment q waits until that slice was staged.)
  for (uint64_t j = 0; j < S; ++j)
    for (int k = 1; k < n; ++k) {
      int q = mod(r + k, n);
      s.add(send_step(q, p.slice_size(r, j), region(Buffer::kScratch, r, j), {summed[j]}));
      s.add(recv_step(q, p.slice_size(q, j), region(Buffer::kOutput, q, j), {staged[q * S + j]}));
    }
  return s;
}

}  // namespace xm::ccl
