// Pipelined chain broadcast: root -> root+1 -> ... -> root-1, slice by slice, so every
// link is busy at once and the time approaches one buffer's transfer.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule chain_broadcast(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "chain";
  const int n = a.ranks, pos = mod(a.rank - a.root, n);
  const int next = pos + 1 < n ? mod(a.rank + 1, n) : -1, prev = pos > 0 ? mod(a.rank - 1, n) : -1;
  // The root's data is its input (copied to its output unless in place); others receive.
  uint32_t own = pos == 0 && !a.in_place ? s.add(copy_step(a.count, {Buffer::kInput, 0}, {Buffer::kOutput, 0})) : kNoStep;
  if (n == 1) return s;
  Partition p(a.count, 1, a.chunk_bytes / size_of(a.type));
  for (uint64_t j = 0; j < p.slices(); ++j) {
    uint64_t off = p.slice_begin(0, j), len = p.slice_size(0, j);
    uint32_t have = prev >= 0 ? s.add(recv_step(prev, len, {Buffer::kOutput, off})) : own;
    if (next >= 0) s.add(pull_send_step(next, len, {Buffer::kOutput, off}, after_step(have)));
  }
  return s;
}

}  // namespace xm::sched
