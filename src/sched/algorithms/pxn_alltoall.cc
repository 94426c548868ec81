// PXN all-to-all (NCCL's "PCI × NVLink"), for H hosts of L ranks where local rank l
// drives NIC l on rail l. A block for rank (g, m) on another host first crosses the
// host's shared memory to local rank m, which sends it on over NIC m to NIC m of host
// g: every byte between hosts stays in one rail, none crosses the spine. Blocks for
// ranks of the same host go directly.
//
// Streams, in the order both ends list them:
//   local l -> local m:        the block for m, then for each remote host g (in the
//                              order g = h+1, h+2, ...) the block for (g, m)
//   (h, l) -> (g, l), g != h:  (h, l)'s own block, then the blocks of (h, m), m != l
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {

Schedule pxn_alltoall(const CollectiveArgs& a) {
  const RankLayout* layout = a.layout;
  const int L = layout ? layout->uniform_local_size() : 0;
  if (!layout || L <= 1 || layout->hosts() <= 1) return pairwise_alltoall(a);
  Schedule s;
  s.algorithm = "pxn";
  const int H = layout->hosts(), h = layout->host_of[a.rank], l = layout->local_of[a.rank], n = a.ranks;
  const uint64_t block = a.count;
  auto at = [&](int host, int local) { return layout->rank_at(host, local); };
  auto remote_host = [&](int k) { return mod(h + k, H); };  // k = 1 .. H-1

  // In place, a block may be overwritten only once it was sent: land in scratch first.
  const BufferId landing = a.in_place ? Buffer::kScratch : Buffer::kOutput;
  const uint64_t relay_base = a.in_place ? uint64_t(n) * block : 0;
  s.scratch_elements = relay_base + uint64_t(L) * H * block;
  auto relay_slot = [&](int m, int g) { return Region{Buffer::kScratch, relay_base + (uint64_t(m) * H + g) * block}; };
  auto in_block = [&](int rank) { return Region{Buffer::kInput, uint64_t(rank) * block}; };
  auto landed = [&](int rank) { return Region{landing, uint64_t(rank) * block}; };

  After all;
  all.push_back(s.add(copy_step(block, in_block(a.rank), landed(a.rank))));
  // Inside the host: direct blocks, then the blocks each local rank relays for us.
  for (int k = 1; k < L; ++k) {
    int m = mod(l + k, L), from = mod(l - k, L);
    all.push_back(s.add(pull_send_step(at(h, m), block, in_block(at(h, m)))));
    all.push_back(s.add(recv_step(at(h, from), block, landed(at(h, from)))));
  }
  for (int m = 0; m < L; ++m)
    if (m != l)
      for (int k = 1; k < H; ++k) all.push_back(s.add(pull_send_step(at(h, m), block, in_block(at(remote_host(k), m)))));
  // On rail l: this rank's own block for (g, l), then what the local ranks handed over.
  for (int k = 1; k < H; ++k) {
    int g = remote_host(k);
    all.push_back(s.add(pull_send_step(at(g, l), block, in_block(at(g, l)))));
    for (int m = 0; m < L; ++m)
      if (m != l) all.push_back(s.add(copy_send_step(at(h, m), at(g, l), block, relay_slot(m, g))));
  }
  // From rail l: each remote host's rank l sends its block and its host's others.
  for (int k = 1; k < H; ++k) {
    int g = remote_host(H - k);
    all.push_back(s.add(recv_step(at(g, l), block, landed(at(g, l)))));
    for (int m = 0; m < L; ++m)
      if (m != l) all.push_back(s.add(recv_step(at(g, l), block, landed(at(g, m)))));
  }
  if (a.in_place)
    for (int rank = 0; rank < n; ++rank) s.add(copy_step(block, landed(rank), {Buffer::kOutput, uint64_t(rank) * block}, all));
  return s;
}

}  // namespace xm::sched
