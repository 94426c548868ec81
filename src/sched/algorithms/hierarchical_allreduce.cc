// Rail-aware hierarchical all-reduce for H hosts of L ranks each (local rank l drives
// NIC l, on rail l): reduce-scatter inside the host over shared memory, so local rank l
// holds the host's sum of segment l; all-reduce segment l across hosts among the ranks
// with local index l, a ring on rail l (no byte crosses rails, the spine idles); then
// all-gather inside the host. Each NIC carries 2(H-1)/H of a segment, an L-th of the
// buffer, so the hosts' L rails run in parallel.
//
// The L·q elements that divide evenly take that path; the last count mod L elements (a
// few) take a flat ring alongside.
//
// hierarchical-tree is the same with a double binary tree across the hosts instead of
// the ring (tree_allreduce.cc): log-depth where 12,800 hosts would make the ring's
// 2(H-1) steps latency-bound.
#include <algorithm>

#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/compose.h"

namespace xm::sched {

namespace {

Schedule hierarchical(const CollectiveArgs& a, bool tree_across) {
  const RankLayout* layout = a.layout;
  const int L = layout ? layout->uniform_local_size() : 0;
  if (!layout || L <= 1 || layout->hosts() <= 1) return tree_across ? tree_allreduce(a) : ring_allreduce(a);
  const int H = layout->hosts(), h = layout->host_of[a.rank], l = layout->local_of[a.rank];
  const uint64_t q = a.count / uint64_t(L), rest = a.count - q * uint64_t(L);

  Schedule s;
  s.algorithm = tree_across ? "hierarchical-tree" : "hierarchical";
  std::vector<int> all(a.ranks);
  for (int r = 0; r < a.ranks; ++r) all[r] = r;
  const std::vector<int>& host = layout->host_ranks[h];
  const std::vector<int> rail = layout->rail_ranks(l);

  auto args = [&](int ranks, int rank, uint64_t count, bool in_place) {
    CollectiveArgs p = a;
    p.ranks = ranks, p.rank = rank, p.count = count, p.in_place = in_place, p.relays = false;
    return p;
  };
  if (rest > 0) {  // the uneven tail: a flat ring
    Placement in_tail{Buffer::kInput, q * L}, out_tail{Buffer::kOutput, q * L};
    append_phase(s, ring_allreduce(args(a.ranks, a.rank, rest, a.in_place)), all, {in_tail, out_tail}, {});
  }
  if (q == 0) return s;
  // Pieces pipeline the phases: piece k crosses the network while piece k+1 is reduced
  // inside the host and piece k-1 gathered. Each phase lists all its pieces before the
  // next phase's, so a piece waiting for the network never blocks the shared-memory
  // queue ahead of another piece's local step.
  const uint64_t piece_bytes = std::max<uint64_t>(a.chunk_bytes * 16, 1);  // long enough for the ring to run at speed
  const uint64_t pieces = std::clamp<uint64_t>(q * size_of(a.type) / piece_bytes, 1, 8);
  std::vector<std::vector<uint32_t>> done(pieces);
  auto piece = [&](uint64_t k) { return std::pair{q * k / pieces, q * (k + 1) / pieces - q * k / pieces}; };
  for (uint64_t k = 0; k < pieces; ++k) {
    // 1. Inside the host: piece k of segment l of the host's sum lands in output segment
    // l. A partial sum: the final touch (avg's division) belongs to phase 2. The piece's
    // L blocks lie q apart in the input.
    auto [begin, len] = piece(k);
    Schedule local_sum = ring_reduce_scatter(args(L, l, len, a.in_place));
    for (Step& st : local_sum.steps) st.finalize = false;
    done[k] = append_phase(s, local_sum, host,
                           {{Buffer::kInput, begin, len, q}, {Buffer::kOutput, q * uint64_t(l) + begin}}, {});
  }
  for (uint64_t k = 0; k < pieces; ++k) {  // 2. Across hosts on rail l, in place.
    auto [begin, len] = piece(k);
    const Placement at{Buffer::kOutput, q * uint64_t(l) + begin};
    const CollectiveArgs across = args(H, h, len, true);
    done[k] = append_phase(s, tree_across ? tree_allreduce(across) : ring_allreduce(across), rail, {at, at}, done[k]);
  }
  for (uint64_t k = 0; k < pieces; ++k) {  // 3. Inside the host: every segment to every rank.
    auto [begin, len] = piece(k);
    const Placement mine{Buffer::kOutput, q * uint64_t(l) + begin}, all_blocks{Buffer::kOutput, begin, len, q};
    append_phase(s, ring_allgather(args(L, l, len, true)), host, {mine, all_blocks}, done[k]);
  }
  return s;
}

}  // namespace

Schedule hierarchical_allreduce(const CollectiveArgs& a) { return hierarchical(a, false); }
Schedule hierarchical_tree_allreduce(const CollectiveArgs& a) { return hierarchical(a, true); }

}  // namespace xm::sched
