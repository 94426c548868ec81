// Ring all-reduce, pipelined: a reduce-scatter ring then an all-gather ring, each of
// the n segments cut into slices that travel the ring independently.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule ring_allreduce(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "ring";
  const int n = a.ranks, r = a.rank, right = mod(r + 1, n), left = mod(r - 1, n);
  const Region in{Buffer::kInput, 0}, out{Buffer::kOutput, 0};
  if (n == 1) {
    if (!a.in_place) s.add(copy_step(a.count, in, out));
    return s;
  }
  Partition p(a.count, n, a.chunk_bytes / size_of(a.type));
  const uint64_t S = p.slices();
  std::vector<uint32_t> last(S, kNoStep), rs_send(S * (n - 1));
  auto region = [&](BufferId b, int seg, uint64_t j) { return Region{b, p.slice_begin(seg, j)}; };

  // Reduce-scatter: at step t send segment r-t, receive segment r-t-1 and add this
  // rank's input to it in the output. After n-1 steps segment r+1 is complete.
  for (int t = 0; t + 1 < n; ++t) {
    int give = mod(r - t, n), take = mod(r - t - 1, n);
    for (uint64_t j = 0; j < S; ++j) {
      rs_send[t * S + j] = s.add(send_step(right, p.slice_size(give, j),
                                           region(t == 0 ? Buffer::kInput : Buffer::kOutput, give, j),
                                           after_step(last[j])));
      last[j] = s.add(reduce_step(left, p.slice_size(take, j), region(Buffer::kInput, take, j),
                                  region(Buffer::kOutput, take, j), t == n - 2, after_step(last[j])));
    }
  }
  // All-gather: forward the newest complete segment, receive the next. The receive into
  // segment r-t also waits for the reduce-scatter send that read it (in place, the
  // input is the output).
  for (int t = 0; t + 1 < n; ++t) {
    int give = mod(r + 1 - t, n), take = mod(r - t, n);
    for (uint64_t j = 0; j < S; ++j) {
      s.add(pull_send_step(right, p.slice_size(give, j), region(Buffer::kOutput, give, j), {last[j]}));
      last[j] = s.add(recv_step(left, p.slice_size(take, j), region(Buffer::kOutput, take, j), {rs_send[t * S + j]}));
    }
  }
  return s;
}

}  // namespace xm::sched
