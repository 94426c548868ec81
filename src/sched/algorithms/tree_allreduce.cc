// Double binary tree all-reduce (as NCCL's trees): the buffer's two halves each go up a
// binary tree to its root, summed on the way, and back down, slice by slice, so the
// depth is paid in latency once per slice instead of the ring's 2(n-1) steps. The
// trees mirror each other (rank r sits at position r in the first and n-1-r in the
// second, a heap order: parent (p-1)/2), so the half of the ranks that are leaves of
// one tree carry the other's interior work and no rank is an interior node of both.
//
// Steps list by phase (up, then down), then slice, then tree, at every rank alike, so
// the two ends of a link list their messages in one order.
#include <array>

#include "sched/algorithms/algorithms.h"
#include "sched/algorithms/partition.h"

namespace xm::sched {
namespace {

struct TreeNode {
  int parent = -1;                // rank
  std::array<int, 2> child{-1, -1};  // ranks
};

TreeNode node_of(int rank, int n, bool mirrored) {
  auto rank_at = [&](int pos) { return mirrored ? n - 1 - pos : pos; };
  const int pos = mirrored ? n - 1 - rank : rank;
  TreeNode t;
  if (pos > 0) t.parent = rank_at((pos - 1) / 2);
  for (int k = 0; k < 2; ++k)
    if (2 * pos + 1 + k < n) t.child[k] = rank_at(2 * pos + 1 + k);
  return t;
}

}  // namespace

Schedule tree_allreduce(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "tree";
  const int n = a.ranks;
  const Region in{Buffer::kInput, 0}, out{Buffer::kOutput, 0};
  if (n == 1) {
    if (!a.in_place) s.add(copy_step(a.count, in, out));
    return s;
  }
  const TreeNode tree[2] = {node_of(a.rank, n, false), node_of(a.rank, n, true)};
  Partition p(a.count, 2, a.chunk_bytes / size_of(a.type));  // segment k: tree k's half
  const uint64_t S = p.slices();
  auto at = [&](BufferId b, int k, uint64_t j) { return Region{b, p.slice_begin(k, j)}; };
  // Up: the sum of this subtree lands in the output (the root's is final), then goes to
  // the parent. A leaf sends its input as it is.
  std::vector<uint32_t> summed(2 * S, kNoStep), sent_up(2 * S, kNoStep);
  for (uint64_t j = 0; j < S; ++j)
    for (int k = 0; k < 2; ++k) {
      const TreeNode& t = tree[k];
      const uint64_t len = p.slice_size(k, j);
      const bool root = t.parent < 0;
      const int children = (t.child[0] >= 0) + (t.child[1] >= 0);
      uint32_t last = kNoStep;
      int done = 0;
      for (int c : t.child) {
        if (c < 0) continue;
        ++done;
        const Region from = last == kNoStep ? at(Buffer::kInput, k, j) : at(Buffer::kOutput, k, j);
        last = s.add(reduce_step(c, len, from, at(Buffer::kOutput, k, j), root && done == children, after_step(last)));
      }
      summed[j * 2 + k] = last;
      if (!root)
        sent_up[j * 2 + k] =
            s.add(send_step(t.parent, len, last == kNoStep ? at(Buffer::kInput, k, j) : at(Buffer::kOutput, k, j),
                            after_step(last)));
    }
  // Down: the final slice from the parent into the output (once the partial sum there
  // went up), then on to the children.
  for (uint64_t j = 0; j < S; ++j)
    for (int k = 0; k < 2; ++k) {
      const TreeNode& t = tree[k];
      const uint64_t len = p.slice_size(k, j);
      uint32_t have = summed[j * 2 + k];
      if (t.parent >= 0) have = s.add(recv_step(t.parent, len, at(Buffer::kOutput, k, j), after_step(sent_up[j * 2 + k])));
      for (int c : t.child)
        if (c >= 0) s.add(pull_send_step(c, len, at(Buffer::kOutput, k, j), after_step(have)));
    }
  return s;
}

}  // namespace xm::sched
