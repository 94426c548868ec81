// Recursive-doubling all-reduce, for small messages where the ring's 2(n-1) steps of
// latency dominate: log2(n) rounds, each an exchange of the whole buffer with the
// partner whose rank differs in one bit. With n not a power of two, the first 2·extra
// ranks pair up first (even sends to odd, which folds it in) and get the result back
// at the end. Both partners of a round compute mine op theirs, which for commutative
// ops gives every rank the same bits.
#include "ccl/algorithms/algorithms.h"

namespace xm::ccl {

Schedule recursive_doubling_allreduce(const CollectiveArgs& a) {
  Schedule s;
  s.algorithm = "recursive-doubling";
  const int n = a.ranks, r = a.rank;
  const Region in{Buffer::kInput, 0}, out{Buffer::kOutput, 0};
  int p2 = 1;
  while (p2 * 2 <= n) p2 *= 2;
  const int extra = n - p2;
  uint32_t last = kNoStep;
  if (r < 2 * extra && r % 2 == 0) {  // folded in: send, then wait for the result
    uint32_t sent = s.add(send_step(r + 1, a.count, in));
    s.add(recv_step(r + 1, a.count, out, {sent}));
    return s;
  }
  if (r < 2 * extra) {
    last = s.add(reduce_step(r - 1, a.count, in, out, p2 == 1));
  } else if (!a.in_place) {
    last = s.add(copy_step(a.count, in, out));
  }
  const int me = r < 2 * extra ? r / 2 : r - extra;
  auto real = [&](int id) { return id < extra ? 2 * id + 1 : id + extra; };
  for (int mask = 1; mask < p2; mask <<= 1) {
    int partner = real(me ^ mask);
    // The buffer may change only once the send of it has completed.
    uint32_t sent = s.add(send_step(partner, a.count, out, after_step(last)));
    last = s.add(reduce_step(partner, a.count, out, out, mask * 2 == p2, {sent}));
  }
  if (r < 2 * extra) s.add(send_step(r - 1, a.count, out, after_step(last)));
  return s;
}

}  // namespace xm::ccl
