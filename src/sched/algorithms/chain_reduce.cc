// Pipelined chain reduce: root-1 -> ... -> root+1 -> root, each rank adding its input
// to the partial sum as the slices pass; the root finishes (avg divides there).
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule chain_reduce(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "chain";
  const int n = a.ranks, pos = mod(a.rank - a.root, n);
  // Data flows toward the root: in from position pos+1, out to position pos-1.
  const int from = pos + 1 < n ? mod(a.rank + 1, n) : -1, to = pos > 0 ? mod(a.rank - 1, n) : -1;
  if (n == 1) {
    if (!a.in_place) s.add(copy_step(a.count, {Buffer::kInput, 0}, {Buffer::kOutput, 0}));
    return s;
  }
  Partition p(a.count, 1, a.chunk_bytes / size_of(a.type));
  if (from >= 0 && to >= 0) s.scratch_elements = a.count;  // middle ranks keep partials
  for (uint64_t j = 0; j < p.slices(); ++j) {
    uint64_t off = p.slice_begin(0, j), len = p.slice_size(0, j);
    const Region in{Buffer::kInput, off};
    if (from < 0) {  // the far end starts the chain with its own input
      s.add(send_step(to, len, in));
    } else if (to < 0) {  // the root finishes
      s.add(reduce_step(from, len, in, {Buffer::kOutput, off}, true));
    } else {
      uint32_t partial = s.add(reduce_step(from, len, in, {Buffer::kScratch, off}, false));
      s.add(send_step(to, len, {Buffer::kScratch, off}, {partial}));
    }
  }
  return s;
}

}  // namespace xm::sched
