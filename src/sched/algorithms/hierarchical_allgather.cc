// Rail-aware hierarchical all-gather for H hosts of L ranks each, numbered host-major
// (local rank l drives NIC l, on rail l): first a ring across hosts on rail l gathers
// the blocks of every host's local rank l, each straight into its place in the output
// (no byte crosses rails); then, for every host's row of L blocks, an all-gather inside
// the host over shared memory. Each NIC carries (H-1) blocks, as in a flat ring over
// the hosts, and the hosts' L rails run in parallel.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/compose.h"

namespace xm::sched {

Schedule hierarchical_allgather(const CollectiveArgs& a) {
  const RankLayout* layout = a.layout;
  if (!layout || !layout->host_major() || layout->uniform_local_size() <= 1 || layout->hosts() <= 1)
    return ring_allgather(a);
  const int H = layout->hosts(), L = layout->uniform_local_size(), h = layout->host_of[a.rank],
            l = layout->local_of[a.rank];
  const uint64_t count = a.count;
  Schedule s;
  s.algorithm = "hierarchical";
  const std::vector<int>& host = layout->host_ranks[h];
  const std::vector<int> rail = layout->rail_ranks(l);
  auto args = [&](int ranks, int rank, bool in_place) {
    CollectiveArgs p = a;
    p.ranks = ranks, p.rank = rank, p.in_place = in_place;
    return p;
  };
  // 1. Across hosts on rail l: host g's block of local rank l lands at rank g·L + l.
  const Placement column{Buffer::kOutput, uint64_t(l) * count, count, uint64_t(L) * count};
  std::vector<uint32_t> across =
      append_phase(s, ring_allgather(args(H, h, a.in_place)), rail, {{Buffer::kInput, 0}, column}, {});
  // 2. Inside the host, row by row: host g's L blocks are contiguous in the output.
  for (int g = 0; g < H; ++g) {
    const Placement row{Buffer::kOutput, uint64_t(g) * L * count};
    append_phase(s, ring_allgather(args(L, l, true)), host, {row, row}, across);
  }
  return s;
}

}  // namespace xm::sched
