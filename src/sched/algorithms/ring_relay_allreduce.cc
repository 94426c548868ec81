// Ring all-reduce with relays, for shared memory and plain buffers: a reduce-scatter
// ring then an all-gather ring, the n segments cut into slices that travel the ring one
// after another.
//
// Per slice, the steps are NCCL's ring primitives: send this rank's part; n-2 times
// receive, add this rank's part and pass on (nothing stored); receive, add, keep the
// final value and pass it on; n-2 times receive a final value, keep it, pass it on;
// receive the last one. A relay touches each byte once where receive-then-send would
// touch it twice. It needs sends that complete once buffered: a zero-copy send (which
// completes when the peer has read it) would wait on the peer's relay, which waits on
// its own send; so even from registered memory its sends copy (the classic ring,
// ring_allreduce.cc, reads registered buffers in place).
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule ring_relay_allreduce(const CollectiveArgs& a) {
  if (a.ranks == 1) return ring_allreduce(a);  // a local copy at most
  Schedule s;
  s.algorithm = "ring-relay";
  const int n = a.ranks, r = a.rank, right = mod(r + 1, n), left = mod(r - 1, n);
  Partition p(a.count, n, a.chunk_bytes / size_of(a.type));
  auto region = [&](BufferId b, int seg, uint64_t j) { return Region{b, p.slice_begin(seg, j)}; };

  // Slice-major, so every rank's sends to its right and receives from its left list in
  // the same order, and a relay never waits behind a send the FIFO cannot hold yet.
  for (uint64_t j = 0; j < p.slices(); ++j) {
    // Reduce-scatter: segment r leaves; segment r-t-1 arrives at step t, gains this
    // rank's part and goes on. After n-1 steps segment r+1 is complete here.
    Step own = send_step(right, p.slice_size(r, j), region(Buffer::kInput, r, j));
    own.by_copy = true;
    uint32_t first = s.add(std::move(own));
    for (int t = 0; t + 1 < n; ++t) {
      int take = mod(r - t - 1, n);
      bool last = t == n - 2;
      s.add(reduce_send_step(left, right, p.slice_size(take, j), region(Buffer::kInput, take, j),
                             region(Buffer::kOutput, take, j), last, !last));
    }
    // All-gather: complete segment r-t arrives at step t and goes on, except the last.
    // (In place, the input is the output: every receive here waits for the send that
    // read this rank's part; the relays that read the others ran before, in order.)
    for (int t = 0; t + 1 < n; ++t) {
      int take = mod(r - t, n);
      if (t < n - 2)
        s.add(copy_send_step(left, right, p.slice_size(take, j), region(Buffer::kOutput, take, j), {first}));
      else
        s.add(recv_step(left, p.slice_size(take, j), region(Buffer::kOutput, take, j), {first}));
    }
  }
  return s;
}

}  // namespace xm::sched
