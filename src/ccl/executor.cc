#include "ccl/executor.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

#include "ccl/copy.h"
#include "ccl/reduce.h"

namespace xm::ccl {
namespace {

std::string peer_name(const ExecOptions& o, int peer) {
  if (o.peer_names && size_t(peer) < o.peer_names->size()) return (*o.peer_names)[peer];
  return "rank " + std::to_string(peer);
}

}  // namespace

Plan::Plan(Schedule schedule, int ranks) : schedule_(std::move(schedule)), sends_(ranks), recvs_(ranks) {
  const auto& steps = schedule_.steps;
  waiting_.resize(steps.size());
  dependents_begin_.assign(steps.size() + 1, 0);
  for (const Step& st : steps)
    for (uint32_t dep : st.after) ++dependents_begin_[dep + 1];
  for (size_t i = 0; i < steps.size(); ++i) dependents_begin_[i + 1] += dependents_begin_[i];
  dependents_.resize(dependents_begin_.back());
  std::vector<uint32_t> fill(dependents_begin_.begin(), dependents_begin_.end() - 1);
  for (uint32_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    waiting_[i] = uint32_t(st.after.size());
    for (uint32_t dep : st.after) dependents_[fill[dep]++] = i;
    switch (st.kind) {
      case StepKind::kSend: sends_[st.peer].push_back(i); break;
      case StepKind::kRecv: case StepKind::kRecvReduce: recvs_[st.peer].push_back(i); break;
      case StepKind::kCopy: copies_.push_back(i); break;
      case StepKind::kRecvReduceSend: case StepKind::kRecvCopySend:
        recvs_[st.peer].push_back(i);
        sends_[st.to].push_back(i);
        break;
    }
  }
  for (int p = 0; p < ranks; ++p)
    if (!sends_[p].empty() || !recvs_[p].empty()) active_peers_.push_back(p);
}

std::byte* Executor::at(const Region& r) const {
  const ExecBuffers& b = *buffers_;
  std::byte* base = r.buffer == Buffer::kInput     ? b.input
                    : r.buffer == Buffer::kOutput  ? b.output
                    : r.buffer == Buffer::kScratch ? b.scratch
                                                   : b.user[r.buffer - Buffer::kUser];
  return base + r.offset * elem_;
}

void Executor::complete(uint32_t i) {
  ++completed_;
  for (uint32_t k = plan_->dependents_begin_[i]; k < plan_->dependents_begin_[i + 1]; ++k)
    --waiting_[plan_->dependents_[k]];
}

void Executor::copy_out(std::byte* dst, const std::byte* src, size_t bytes, const Region& to) const {
  if (stream_output_ && to.buffer == Buffer::kOutput) copy_streaming(dst, src, bytes);
  else std::memmove(dst, src, bytes);
}

bool Executor::run_copies() {
  bool moved = false;
  for (size_t c = 0; c < plan_->copies_.size(); ++c) {
    uint32_t i = plan_->copies_[c];
    if (copy_done_[c] || waiting_[i]) continue;
    const Step& st = plan_->schedule_.steps[i];
    std::byte *src = at(st.src), *dst = at(st.dst);
    if (src != dst && st.count > 0) copy_out(dst, src, st.count * elem_, st.dst);
    copy_done_[c] = 1;
    complete(i);
    moved = true;
  }
  return moved;
}

bool Executor::send(Link& link, uint32_t i) {
  const Step& st = plan_->schedule_.steps[i];
  uint64_t total = st.count * elem_;
  const std::byte* from = at(st.src) + done_bytes_[i];
  const size_t left = size_t(total - done_bytes_[i]);
  done_bytes_[i] += st.by_copy ? link.send_copy(from, left) : st.pull ? link.send_pulled(from, left) : link.send_some(from, left);
  return done_bytes_[i] == total;
}

bool Executor::recv(Link& link, uint32_t i) {
  const Step& st = plan_->schedule_.steps[i];
  const uint64_t total = st.count * elem_;
  uint64_t& done = done_bytes_[i];
  const DataType type = args_->type;
  const RedOp op = args_->op;
  const bool copying = st.kind == StepKind::kRecv || st.kind == StepKind::kRecvCopySend;
  while (done < total) {
    if (copying) {  // straight into place where the link copies itself
      if (size_t k = link.receive_into(at(st.dst) + done, total - done)) {
        done += k;
        continue;
      }
    }
    std::span<const std::byte> in = link.readable();
    if (in.empty()) break;
    size_t n = size_t(std::min<uint64_t>(in.size(), total - done));
    if (copying) {
      copy_out(at(st.dst) + done, in.data(), n, st.dst);
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
        reduce(at(st.dst) + done, at(st.src) + done, c.data, 1, type, op);
        done += elem_;
        c.bytes = 0;
      }
      continue;
    }
    size_t whole = n / elem_;
    const std::byte* incoming = in.data();
    if (reinterpret_cast<uintptr_t>(incoming) % elem_ != 0) {
      // A byte stream (TCP) may hold an element at any offset after an odd-sized
      // message: reduce from an aligned copy rather than load misaligned.
      whole = std::min(whole, bounce_.size() / elem_);
      std::memcpy(bounce_.data(), incoming, whole * elem_);
      incoming = bounce_.data();
    }
    reduce(at(st.dst) + done, at(st.src) + done, incoming, whole, type, op);
    link.consume(whole * elem_);
    done += whole * elem_;
  }
  if (done < total) return false;
  if (!copying && st.finalize && op == RedOp::kAvg)
    finalize_avg(at(st.dst), st.count, type, args_->ranks);
  return true;
}

bool Executor::relay(uint32_t i) {
  const Step& st = plan_->schedule_.steps[i];
  if (plan_->sends_[st.to][send_head_[st.to]] != i) return false;  // earlier sends to `to` first
  Link &from = *links_[st.peer], &to = *links_[st.to];
  const uint64_t total = st.count * elem_;
  uint64_t& done = done_bytes_[i];
  if (!from.in_memory() || !to.in_memory()) {
    // A stream without in-place access: receive into dst, then send from there.
    if (done < total && !recv(from, i)) return false;
    sent_bytes_[i] += to.send_some(at(st.dst) + sent_bytes_[i], total - sent_bytes_[i]);
    return sent_bytes_[i] == total && finish_relay(i);
  }
  const bool reduce_op = st.kind == StepKind::kRecvReduceSend;
  const bool finalize_avg_now = reduce_op && st.finalize && args_->op == RedOp::kAvg;
  while (done < total) {
    std::span<const std::byte> in = from.readable();
    if (in.empty()) break;
    std::span<std::byte> out = to.reserve(size_t(std::min<uint64_t>(in.size(), total - done)));
    size_t n = std::min(in.size(), out.size());
    n -= n % elem_;
    if (n == 0) break;
    std::byte* dst = at(st.dst) + done;
    if (reduce_op) {
      reduce(out.data(), at(st.src) + done, in.data(), n / elem_, args_->type, args_->op);
      if (finalize_avg_now) finalize_avg(out.data(), n / elem_, args_->type, args_->ranks);
      if (!st.forward_only) std::memcpy(dst, out.data(), n);
    } else {
      std::memcpy(out.data(), in.data(), n);
      std::memcpy(dst, in.data(), n);
    }
    to.commit(n);
    from.consume(n);
    done += n;
  }
  return done == total && finish_relay(i);
}

bool Executor::finish_relay(uint32_t i) {
  ++send_head_[plan_->schedule_.steps[i].to];  // the run loop advances the receive side
  return true;
}

void Executor::wait_for_peers(const Plan& plan, WaitObserver* observer) {
  if (observer) observer->waiting();
  // Every pending link a socket: sleep until one is ready (1 ms at most, for copies
  // and cancellation), giving the core to ranks that have work. Else just yield.
  poll_fds_.clear();
  for (int p : plan.active_peers_) {
    bool sending = send_head_[p] < plan.sends_[p].size(), receiving = recv_head_[p] < plan.recvs_[p].size();
    if ((sending || receiving) && !links_[p]->wait_fds(sending, poll_fds_)) return void(sched_yield());
  }
  if (poll_fds_.empty()) return void(sched_yield());
  ::poll(poll_fds_.data(), poll_fds_.size(), 1);
}

Status Executor::run(const Plan& plan, const CollectiveArgs& args, const ExecBuffers& buffers,
                     std::span<Link* const> links, const ExecOptions& options) {
  plan_ = &plan;
  args_ = &args;
  buffers_ = &buffers;
  elem_ = size_of(args.type);
  completed_ = 0;
  stream_output_ = plan.schedule_.output_write_only && !args.in_place &&
                   output_count(args) * elem_ >= kStreamOutputMinBytes;
  const size_t n = plan.schedule_.steps.size();
  waiting_.assign(plan.waiting_.begin(), plan.waiting_.end());
  done_bytes_.assign(n, 0);
  sent_bytes_.assign(n, 0);
  links_ = links;
  carry_.assign(n, Carry{});
  send_head_.assign(plan.sends_.size(), 0);
  recv_head_.assign(plan.recvs_.size(), 0);
  copy_done_.assign(plan.copies_.size(), 0);

  // Advances a peer's queue while its head step is ready; true if anything moved.
  auto drain = [&](const std::vector<uint32_t>& q, size_t& head, auto&& step) {
    bool moved = false;
    while (head < q.size() && waiting_[q[head]] == 0) {
      uint32_t i = q[head];
      uint64_t before = done_bytes_[i] + sent_bytes_[i];
      bool finished = step(i);
      moved |= finished || done_bytes_[i] + sent_bytes_[i] != before;
      if (!finished) break;
      complete(i);
      ++head;
    }
    return moved;
  };

  // The timeout counts from the last progress: a long healthy transfer never trips it.
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  unsigned idle = 0;
  uint64_t moves = 0, moves_at_check = 0;
  while (completed_ < n) {
    bool moved = run_copies();
    for (int p : plan.active_peers_) {
      bool sending = send_head_[p] < plan.sends_[p].size(), receiving = recv_head_[p] < plan.recvs_[p].size();
      Link* link = links[p];
      if (!sending && !receiving) {  // done with this peer (it may leave now), but maybe not its link
        if (link && link->busy()) link->progress();  // (no link: this rank itself)
        continue;
      }
      link->progress();
      // A relay is driven from its receive side, once it also heads its send queue.
      moved |= drain(plan.sends_[p], send_head_[p], [&](uint32_t i) { return !is_relay(i) && send(*link, i); });
      moved |= drain(plan.recvs_[p], recv_head_[p], [&](uint32_t i) { return is_relay(i) ? relay(i) : recv(*link, i); });
      bool still = send_head_[p] < plan.sends_[p].size() || recv_head_[p] < plan.recvs_[p].size();
      if (Status st = link->status(); still && !st) return Error{"link to " + peer_name(options, p) + ": " + st.message()};
    }
    if (moved) {
      ++moves;
      idle = 0;
      continue;
    }
    // Nothing to do until a peer moves: spin briefly (the peer is usually on another
    // core), then give the core away; at once when ranks outnumber cores.
    ++idle;
    if (options.background && (idle & 63) == 0) options.background();
    if (options.yield_at_once || idle > 256) wait_for_peers(plan, options.on_wait);
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return Error{"aborted"};
    if ((idle & 255) != 0) continue;
    auto now = std::chrono::steady_clock::now();
    if (moves != moves_at_check) {  // progress since the last look: the clock starts again
      moves_at_check = moves;
      deadline = now + options.timeout;
    }
    if (now > deadline) {
      // Name the peers whose next step could run but does not move (the stuck ones), else
      // every peer with steps left; the first four.
      auto ready_head = [&](const std::vector<uint32_t>& q, size_t head) { return head < q.size() && waiting_[q[head]] == 0; };
      auto pending = [&](int p) { return send_head_[p] < plan.sends_[p].size() || recv_head_[p] < plan.recvs_[p].size(); };
      auto stuck = [&](int p) { return ready_head(plan.sends_[p], send_head_[p]) || ready_head(plan.recvs_[p], recv_head_[p]); };
      bool any_stuck = std::any_of(plan.active_peers_.begin(), plan.active_peers_.end(), stuck);
      std::string waiting;
      int count = 0;
      for (int p : plan.active_peers_)
        if (any_stuck ? stuck(p) : pending(p))
          if (++count <= 4) waiting += (waiting.empty() ? "" : ", ") + peer_name(options, p);
      if (count > 4) waiting += " and " + std::to_string(count - 4) + " more";
      return Error{"timed out after " + std::to_string(options.timeout.count()) + " ms with " +
                   std::to_string(n - completed_) + " of " + std::to_string(n) + " steps of " +
                   to_string(args.collective) + " unfinished and no progress, waiting on " + waiting +
                   " (a peer died or stalled, or its host is cut off?)"};
    }
  }
  if (stream_output_) streaming_fence();  // the output is whole before the caller hears so
  return flush(plan, options);
}

// Every step is done, but a link may still hold bytes a send step handed it (a socket
// that was full): they reach the network before the caller hears the operation is done,
// as nothing may drive the link for a while after (Link::unsent).
Status Executor::flush(const Plan& plan, const ExecOptions& options) {
  auto deadline = std::chrono::steady_clock::now() + options.timeout;
  for (unsigned round = 0;; ++round) {
    bool unsent = false;
    for (int p : plan.active_peers_) {
      Link* link = links_[p];
      if (!link || !link->unsent()) continue;
      link->progress();
      if (Status st = link->status(); !st) return Error{"link to " + peer_name(options, p) + ": " + st.message()};
      unsent |= link->unsent();
    }
    if (!unsent) return Status::Ok();
    if (options.background && (round & 63) == 63) options.background();
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return Error{"aborted"};
    if (std::chrono::steady_clock::now() > deadline)
      return Error{"timed out after " + std::to_string(options.timeout.count()) + " ms handing the last bytes of " +
                   to_string(args_->collective) + " to the network"};
    sched_yield();
  }
}

Status execute(const Schedule& schedule, const CollectiveArgs& args, const ExecBuffers& buffers,
               std::span<Link* const> links, const ExecOptions& options) {
  Plan plan(schedule, args.ranks);
  Executor e;
  return e.run(plan, args, buffers, links, options);
}

}  // namespace xm::ccl
