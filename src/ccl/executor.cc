#include "ccl/executor.h"

#include <sched.h>

#include <cstring>
#include <vector>

#include "ccl/reduce.h"

namespace xm::ccl {
namespace {

class Run {
 public:
  Run(const Schedule& s, const CollectiveArgs& a, const ExecBuffers& b, std::span<Link* const> links)
      : s_(s), a_(a), b_(b), links_(links), elem_(size_of(a.type)),
        waiting_(s.steps.size()), done_bytes_(s.steps.size()), dependents_(s.steps.size()),
        carry_(s.steps.size()), sends_(a.ranks), recvs_(a.ranks) {
    for (uint32_t i = 0; i < s.steps.size(); ++i) {
      const Step& st = s.steps[i];
      waiting_[i] = uint32_t(st.after.size());
      for (uint32_t dep : st.after) dependents_[dep].push_back(i);
      switch (st.kind) {
        case StepKind::kSend: sends_[st.peer].steps.push_back(i); break;
        case StepKind::kRecv: case StepKind::kRecvReduce: recvs_[st.peer].steps.push_back(i); break;
        case StepKind::kCopy: copies_.push_back(i); break;
      }
    }
  }

  Status run(std::chrono::milliseconds timeout, const std::atomic<bool>* cancel) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    unsigned idle = 0;
    while (completed_ < s_.steps.size()) {
      bool moved = run_copies();
      for (int p = 0; p < a_.ranks; ++p) {
        if (sends_[p].steps.empty() && recvs_[p].steps.empty()) continue;
        Link* link = links_[p];
        link->progress();
        moved |= drain(sends_[p], [&](uint32_t i) { return send(*link, i); });
        moved |= drain(recvs_[p], [&](uint32_t i) { return recv(*link, i); });
        if (Status st = link->status(); !st) return Error{"link to rank " + std::to_string(p) + ": " + st.message()};
      }
      if (moved) {
        idle = 0;
        continue;
      }
      // Nothing to do until a peer moves: spin briefly, then give the core away (ranks
      // may outnumber cores), and watch the clock.
      if (++idle > 64) sched_yield();
      if (cancel && cancel->load(std::memory_order_relaxed)) return Error{"aborted"};
      if ((idle & 255) == 0 && std::chrono::steady_clock::now() > deadline)
        return Error{"timed out after " + std::to_string(timeout.count()) + " ms with " +
                     std::to_string(s_.steps.size() - completed_) + " of " + std::to_string(s_.steps.size()) +
                     " steps of " + to_string(a_.collective) + " unfinished (a peer died or stalled?)"};
    }
    return Status::Ok();
  }

 private:
  struct Queue {
    std::vector<uint32_t> steps;
    size_t head = 0;
  };

  std::byte* at(const Region& r) const {
    std::byte* base = r.buffer == Buffer::kInput    ? b_.input
                      : r.buffer == Buffer::kOutput ? b_.output
                      : r.buffer == Buffer::kScratch ? b_.scratch
                                                     : b_.user[r.buffer - Buffer::kUser];
    return base + r.offset * elem_;
  }

  void complete(uint32_t i) {
    ++completed_;
    for (uint32_t d : dependents_[i]) --waiting_[d];
  }

  bool run_copies() {
    bool moved = false;
    for (uint32_t& i : copies_) {
      if (i == UINT32_MAX || waiting_[i]) continue;
      const Step& st = s_.steps[i];
      std::byte *src = at(st.src), *dst = at(st.dst);
      if (src != dst) std::memmove(dst, src, st.count * elem_);
      complete(i);
      i = UINT32_MAX;
      moved = true;
    }
    return moved;
  }

  // Advances the queue's head steps while they are ready; a step finishes when f says so.
  template <typename F>
  bool drain(Queue& q, F f) {
    bool moved = false;
    while (q.head < q.steps.size() && waiting_[q.steps[q.head]] == 0) {
      uint32_t i = q.steps[q.head];
      uint64_t before = done_bytes_[i];
      bool finished = f(i);
      moved |= finished || done_bytes_[i] != before;
      if (!finished) break;
      complete(i);
      ++q.head;
    }
    return moved;
  }

  bool send(Link& link, uint32_t i) {
    const Step& st = s_.steps[i];
    uint64_t total = st.count * elem_;
    done_bytes_[i] += link.send_some(at(st.src) + done_bytes_[i], total - done_bytes_[i]);
    return done_bytes_[i] == total;
  }

  bool recv(Link& link, uint32_t i) {
    const Step& st = s_.steps[i];
    const uint64_t total = st.count * elem_;
    uint64_t& done = done_bytes_[i];
    while (done < total) {
      std::span<const std::byte> in = link.readable();
      if (in.empty()) break;
      size_t n = size_t(std::min<uint64_t>(in.size(), total - done));
      if (st.kind == StepKind::kRecv) {
        std::memcpy(at(st.dst) + done, in.data(), n);
        link.consume(n);
        done += n;
        continue;
      }
      Carry& c = carry_[i];
      if (c.bytes > 0 || n < elem_) {  // an element split across the FIFO's wrap
        size_t k = std::min<size_t>(elem_ - c.bytes, n);
        std::memcpy(c.data + c.bytes, in.data(), k);
        link.consume(k);
        c.bytes += uint32_t(k);
        if (c.bytes == elem_) {
          reduce_into(st, done, c.data, 1);
          done += elem_;
          c.bytes = 0;
        }
        continue;
      }
      size_t whole = n / elem_;
      reduce_into(st, done, in.data(), whole);
      link.consume(whole * elem_);
      done += whole * elem_;
    }
    if (done < total) return false;
    if (st.kind == StepKind::kRecvReduce && st.finalize && a_.op == RedOp::kAvg)
      finalize_avg(at(st.dst), st.count, a_.type, a_.ranks);
    return true;
  }

  void reduce_into(const Step& st, uint64_t done, const std::byte* incoming, size_t elements) {
    reduce(at(st.dst) + done, at(st.src) + done, incoming, elements, a_.type, a_.op);
  }

  struct Carry {
    std::byte data[8];
    uint32_t bytes = 0;
  };

  const Schedule& s_;
  const CollectiveArgs& a_;
  const ExecBuffers& b_;
  std::span<Link* const> links_;
  const size_t elem_;
  size_t completed_ = 0;
  std::vector<uint32_t> waiting_;
  std::vector<uint64_t> done_bytes_;
  std::vector<std::vector<uint32_t>> dependents_;
  std::vector<Carry> carry_;
  std::vector<Queue> sends_, recvs_;
  std::vector<uint32_t> copies_;
};

}  // namespace

Status execute(const Schedule& schedule, const CollectiveArgs& args, const ExecBuffers& buffers,
               std::span<Link* const> links, const ExecOptions& options) {
  return Run(schedule, args, buffers, links).run(options.timeout, options.cancel);
}

}  // namespace xm::ccl
