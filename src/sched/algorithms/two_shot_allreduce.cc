// Two-shot all-reduce, for ranks that all share memory: every rank stages its input in
// scratch the peers read in place, sums its own segment straight out of the peers'
// scratch, and every rank then copies the others' sums straight out of theirs.
//
// A ring passes each slice through every rank, one hop after another: 2(n-1) hand-offs,
// each needing the next rank on a core. When ranks outnumber cores (4 ranks on 2 here)
// those hand-offs wait for the scheduler. Two-shot has two: a rank stages what it can
// before anyone needs to run beside it, and a peer that runs late finds its data ready.
// It touches about as many bytes as the relay ring (a copy in, n-1 reductions of one
// segment, a copy of the result, n-1 segments copied out).
//
// Scratch is a window of kScratchSlots slots per segment, reused slice after slice, so
// it stays in cache however large the message: slot (q, j mod kScratchSlots) holds this
// rank's slice j of segment q for rank q, or (q = r) the sum of slice j. The schedule
// asks for shared scratch, so a send from it is a descriptor, the receiver reads the
// bytes where they lie, and the send completes when they have been read: that is when
// a slot is free.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {
namespace {

constexpr uint64_t kLag = 2;  // the gather of slice j goes out with the staging of j + kLag

}  // namespace

Schedule two_shot_allreduce(const CollectiveArgs& a) {
  if (a.ranks == 1) return ring_allreduce(a);  // a local copy at most
  Schedule s;
  s.algorithm = "two-shot";
  s.scratch_shared = true;
  s.output_write_only = true;  // sums and peers' sums are sent from scratch
  const int n = a.ranks, r = a.rank;
  Partition p(a.count, n, a.chunk_bytes / size_of(a.type));
  const uint64_t S = p.slices(), slots = std::min(S, kScratchSlots), slot_elements = p.largest_slice();
  s.scratch_elements = uint64_t(n) * slots * slot_elements;
  auto user = [&](BufferId b, int seg, uint64_t j) { return Region{b, p.slice_begin(seg, j)}; };
  auto slot = [&](int seg, uint64_t j) { return Region{Buffer::kScratch, (seg * slots + j % slots) * slot_elements}; };

  // Step indices by (segment, slice), for the dependencies across the window.
  std::vector<uint32_t> staged(n * S, kNoStep), offered(n * S, kNoStep), summed(S, kNoStep), kept(S, kNoStep);
  std::vector<std::vector<uint32_t>> shared(S);  // the sends of slice j's sum
  // Stage slice j: segment q's part goes to its slot (free once rank q read the slice
  // kScratchSlots before) and is offered to rank q. Each rank starts with its right
  // neighbour, so the ranks do not all read one peer first.
  auto stage = [&](uint64_t j) {
    for (int k = 1; k < n; ++k) {
      int q = mod(r + k, n);
      After free = j >= slots ? After{offered[q * S + j - slots]} : After{};
      staged[q * S + j] = s.add(copy_step(p.slice_size(q, j), user(Buffer::kInput, q, j), slot(q, j), free));
      offered[q * S + j] = s.add(send_step(q, p.slice_size(q, j), slot(q, j), {staged[q * S + j]}));
    }
    // Sum slice j of segment r into its slot, every peer's part read where it lies (the
    // first added to this rank's input), once the slot's last sum was read by all.
    After free;
    if (j >= slots) {
      free = shared[j - slots];
      free.push_back(kept[j - slots]);
    }
    uint32_t last = kNoStep;
    for (int k = 1; k < n; ++k) {
      int from = mod(r - k, n);
      Region src = k == 1 ? user(Buffer::kInput, r, j) : slot(r, j);
      last = s.add(reduce_step(from, p.slice_size(r, j), src, slot(r, j), k == n - 1, k == 1 ? free : After{last}));
    }
    summed[j] = last;
    kept[j] = s.add(copy_step(p.slice_size(r, j), slot(r, j), user(Buffer::kOutput, r, j), {last}));
  };
  // Gather slice j: offer its sum to every peer, take theirs. (In place, the input is
  // the output: a receive into segment q waits until that slice was staged.)
  auto gather = [&](uint64_t j) {
    for (int k = 1; k < n; ++k) {
      int q = mod(r + k, n);
      shared[j].push_back(s.add(pull_send_step(q, p.slice_size(r, j), slot(r, j), {summed[j]})));
      s.add(recv_step(q, p.slice_size(q, j), user(Buffer::kOutput, q, j), {staged[q * S + j]}));
    }
  };
  // Every rank lists its sends to a peer in the order that peer lists its receives:
  // staging of j, then the gather of j - kLag. A slot is reused only after what
  // precedes it in that order (kLag < kScratchSlots), so the window never waits on itself.
  const uint64_t lag = std::min(kLag, slots - 1);
  for (uint64_t t = 0; t < S + lag; ++t) {
    if (t < S) stage(t);
    if (t >= lag) gather(t - lag);
  }
  return s;
}

}  // namespace xm::sched
