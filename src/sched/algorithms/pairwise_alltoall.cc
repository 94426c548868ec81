// Pairwise-exchange all-to-all: exchange t sends this rank's block for rank r+t and
// receives from rank r-t. The exchanges are not serialised (each link is a FIFO of its
// own, so they overlap); their order spreads the first bytes over distinct peers.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule pairwise_alltoall(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "pairwise";
  s.output_write_only = true;  // sends read the input
  const int n = a.ranks, r = a.rank;
  const uint64_t block = a.count;
  // In place, a block may be overwritten only once it was sent: receive into scratch.
  const BufferId landing = a.in_place ? Buffer::kScratch : Buffer::kOutput;
  if (a.in_place) s.scratch_elements = block * n;
  else s.add(copy_step(block, {Buffer::kInput, r * block}, {Buffer::kOutput, r * block}));
  After exchanged;
  for (int t = 1; t < n; ++t) {
    uint64_t to = uint64_t(mod(r + t, n)), from = uint64_t(mod(r - t, n));
    exchanged.push_back(s.add(pull_send_step(int(to), block, {Buffer::kInput, to * block})));
    exchanged.push_back(s.add(recv_step(int(from), block, {landing, from * block})));
  }
  if (a.in_place)  // every send has read its block: move the received blocks home
    for (int t = 1; t < n; ++t) {
      uint64_t from = uint64_t(mod(r - t, n));
      s.add(copy_step(block, {Buffer::kScratch, from * block}, {Buffer::kOutput, from * block}, exchanged));
    }
  return s;
}

}  // namespace xm::sched
