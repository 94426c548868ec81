// Recursive-doubling all-reduce, for small messages where the ring's 2(n-1) steps of
// latency dominate: log2(n) rounds, each an exchange of the whole buffer with the
// partner whose rank differs in one bit. With n not a power of two, the first 2·extra
// ranks pair up first (even sends to odd, which folds it in) and get the result back
// at the end. Both partners of a round compute mine op theirs, which for commutative
// ops gives every rank the same bits.
#include "sched/algorithms/algorithms.h"

namespace xm::sched {

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
  // The running value alternates between the output and scratch: a round reads one
  // (sending it, and adding what arrives) and writes the other, which the send two
  // rounds back read, so no round waits on the partner having read its send — with
  // sends that complete only once read (large or registered), waiting would deadlock.
  s.scratch_elements = a.count;
  const Region buf[2] = {out, {Buffer::kScratch, 0}};
  uint32_t sent_before = kNoStep;
  int cur = 0;
  for (int mask = 1; mask < p2; mask <<= 1) {
    int partner = real(me ^ mask);
    uint32_t sent = s.add(send_step(partner, a.count, buf[cur], after_step(last)));
    After ready = after_step(last);
    if (sent_before != kNoStep) ready.push_back(sent_before);
    last = s.add(reduce_step(partner, a.count, buf[cur], buf[1 - cur], mask * 2 == p2, ready));
    sent_before = sent;
    cur = 1 - cur;
  }
  if (cur == 1) last = s.add(copy_step(a.count, buf[1], out, {last, sent_before}));
  if (r < 2 * extra) s.add(send_step(r - 1, a.count, out, after_step(last)));
  return s;
}

}  // namespace xm::sched
