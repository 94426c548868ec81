// Rail-aware hierarchical reduce-scatter for H hosts of L ranks each, numbered
// host-major (local rank l drives NIC l, on rail l): first, for every host's row of L
// blocks, a reduce-scatter inside the host over shared memory, so local rank l holds the
// host's partial sums of the blocks of every host's local rank l (in scratch); then a
// ring across hosts on rail l reduces those H partials, each rank keeping its own block.
// Each NIC carries (H-1) blocks and no byte crosses rails.
#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/compose.h"

namespace xm::sched {

Schedule hierarchical_reduce_scatter(const CollectiveArgs& a) {
  const RankLayout* layout = a.layout;
  if (!layout || !layout->host_major() || layout->uniform_local_size() <= 1 || layout->hosts() <= 1)
    return ring_reduce_scatter(a);
  const int H = layout->hosts(), L = layout->uniform_local_size(), h = layout->host_of[a.rank],
            l = layout->local_of[a.rank];
  const uint64_t count = a.count;
  Schedule s;
  s.algorithm = "hierarchical";
  s.scratch_elements = uint64_t(H) * count;  // the host's partials for column l; phases' scratch follows
  const std::vector<int>& host = layout->host_ranks[h];
  const std::vector<int> rail = layout->rail_ranks(l);
  auto args = [&](int ranks, int rank) {
    CollectiveArgs p = a;
    p.ranks = ranks, p.rank = rank, p.in_place = false;
    return p;
  };
  // 1. Inside the host, row by row: host g's L blocks are contiguous in the input; the
  // partial sum of block (g, l) goes to scratch block g. A partial: the final touch
  // (avg's division) belongs to phase 2. (In place, the output is the input's block of
  // this rank; phase 2 writes it only after every read of phase 1.)
  std::vector<uint32_t> local;
  for (int g = 0; g < H; ++g) {
    Schedule row_sum = ring_reduce_scatter(args(L, l));
    for (Step& st : row_sum.steps) st.finalize = false;
    std::vector<uint32_t> last = append_phase(s, row_sum, host,
                                              {{Buffer::kInput, uint64_t(g) * L * count},
                                               {Buffer::kScratch, uint64_t(g) * count}},
                                              {});
    local.insert(local.end(), last.begin(), last.end());
  }
  // 2. Across hosts on rail l: the H partials reduce to this rank's block.
  append_phase(s, ring_reduce_scatter(args(H, h)), rail, {{Buffer::kScratch, 0}, {Buffer::kOutput, 0}}, local);
  return s;
}

}  // namespace xm::sched
