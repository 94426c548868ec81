// Rail-aware hierarchical all-reduce for H hosts of L ranks each (local rank l drives
// NIC l, on rail l): reduce-scatter inside the host over shared memory, so local rank l
// holds the host's sum of segment l; all-reduce segment l across hosts among the ranks
// with local index l, a ring on rail l (no byte crosses rails, the spine idles); then
// all-gather inside the host. Each NIC carries 2(H-1)/H of a segment, an L-th of the
// buffer, so the hosts' L rails run in parallel.
//
// The L·q elements that divide evenly take that path; the last count mod L elements (a
// few) take a flat ring alongside.
#include "ccl/algorithms/algorithms.h"
#include "ccl/algorithms/compose.h"

namespace xm::ccl {

Schedule hierarchical_allreduce(const CollectiveArgs& a) {
  const RankLayout* layout = a.layout;
  const int L = layout ? layout->uniform_local_size() : 0;
  if (!layout || L <= 1 || layout->hosts() <= 1) return ring_allreduce(a);
  const int H = layout->hosts(), h = layout->host_of[a.rank], l = layout->local_of[a.rank];
  const uint64_t q = a.count / uint64_t(L), rest = a.count - q * uint64_t(L);

  Schedule s;
  s.algorithm = "hierarchical";
  std::vector<int> all(a.ranks), host = layout->host_ranks[h], rail;
  for (int r = 0; r < a.ranks; ++r) all[r] = r;
  for (int g = 0; g < H; ++g) rail.push_back(layout->rank_at(g, l));

  auto args = [&](int ranks, int rank, uint64_t count, bool in_place) {
    CollectiveArgs p = a;
    p.ranks = ranks, p.rank = rank, p.count = count, p.in_place = in_place, p.relays = false;
    return p;
  };
  const Placement in{Buffer::kInput, 0}, out{Buffer::kOutput, 0};
  if (rest > 0) {  // the uneven tail: a flat ring
    Placement in_tail{Buffer::kInput, q * L}, out_tail{Buffer::kOutput, q * L};
    append_phase(s, ring_allreduce(args(a.ranks, a.rank, rest, a.in_place)), all, {in_tail, out_tail}, {});
  }
  if (q == 0) return s;
  const Placement mine{Buffer::kOutput, q * uint64_t(l)};
  // 1. Inside the host: segment l of the host's sum lands in output segment l. A
  // partial sum: the final touch (avg's division) belongs to phase 2.
  Schedule local_sum = ring_reduce_scatter(args(L, l, q, a.in_place));
  for (Step& st : local_sum.steps) st.finalize = false;
  std::vector<uint32_t> last = append_phase(s, local_sum, host, {in, mine}, {});
  // 2. Across hosts on rail l: all-reduce segment l in place.
  last = append_phase(s, ring_allreduce(args(H, h, q, true)), rail, {mine, mine}, last);
  // 3. Inside the host: every segment to every local rank.
  append_phase(s, ring_allgather(args(L, l, q, true)), host, {mine, out}, last);
  return s;
}

}  // namespace xm::ccl
