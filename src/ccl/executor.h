// Runs one rank's schedule over its links until every step is done.
//
// A Plan is a schedule prepared for execution (dependents, per-peer queues); it is
// immutable and can be reused for every call with the same arguments. An Executor
// holds the per-run state, reused across runs so a call allocates nothing.
//
// Contract: run() blocks the calling thread until the collective completes, a link
// fails, `cancel` is set, or `timeout` passes without it finishing (an error, never a
// hang). Buffers are the caller's.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "ccl/link.h"
#include "ccl/schedules.h"
#include "util/result.h"

namespace xm::ccl {

struct ExecBuffers {
  std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;  // at least schedule.scratch_elements elements
  std::vector<std::byte*> user;  // Buffer::kUser + k
};

// Outputs at least this large, out of place, of schedules that never read their output
// (Schedule::output_write_only) are written with streaming stores: the previous call's
// output has left the cache by then, and a cached store would first read each line back
// (measured: two-shot all-reduce 1.2-1.6x at 16-64 MiB, neutral at 2-8 MiB).
inline constexpr size_t kStreamOutputMinBytes = 8 << 20;

// Told when the rank has had nothing to do for a while and is about to give its core
// away (e.g. to check where it runs: shm/cpu_spread.h).
class WaitObserver {
 public:
  virtual ~WaitObserver() = default;
  virtual void waiting() = 0;
};

struct ExecOptions {
  std::chrono::milliseconds timeout{30000};
  const std::atomic<bool>* cancel = nullptr;  // set by another thread: stop with an error
  bool yield_at_once = false;  // more ranks than cores here: never spin, give the core away
  WaitObserver* on_wait = nullptr;
  // Who each rank is, for errors: "rank 1 (host h1, rails 10.0.0.2, 10.0.1.2)".
  const std::vector<std::string>* peer_names = nullptr;
  // The transports' own work for links this collective does not drive (stripes of a
  // failed rail to resend, a rail to reconnect); run while waiting.
  std::function<void()> background = nullptr;
};

class Plan {
 public:
  Plan(Schedule schedule, int ranks);
  const Schedule& schedule() const { return schedule_; }

 private:
  friend class Executor;
  Schedule schedule_;
  std::vector<uint32_t> waiting_;                 // initial dependency counts
  std::vector<uint32_t> dependents_begin_, dependents_;  // CSR: who waits on step i
  std::vector<std::vector<uint32_t>> sends_, recvs_;     // per peer, in schedule order
  std::vector<uint32_t> copies_;
  std::vector<int> active_peers_;                 // peers with any step
};

class Executor {
 public:
  Status run(const Plan& plan, const CollectiveArgs& args, const ExecBuffers& buffers, std::span<Link* const> links,
             const ExecOptions& options = {});

 private:
  struct Carry {
    alignas(8) std::byte data[8];
    uint32_t bytes = 0;
  };
  std::byte* at(const Region& r) const;
  void complete(uint32_t step);
  bool run_copies();
  void copy_out(std::byte* dst, const std::byte* src, size_t bytes, const Region& to) const;
  bool send(Link& link, uint32_t step);
  bool recv(Link& link, uint32_t step);
  bool relay(uint32_t step);
  bool finish_relay(uint32_t step);
  void wait_for_peers(const Plan& plan, WaitObserver* observer);
  Status flush(const Plan& plan, const ExecOptions& options);
  bool is_relay(uint32_t step) const {
    StepKind k = plan_->schedule_.steps[step].kind;
    return k == StepKind::kRecvReduceSend || k == StepKind::kRecvCopySend;
  }

  const Plan* plan_ = nullptr;
  const CollectiveArgs* args_ = nullptr;
  const ExecBuffers* buffers_ = nullptr;
  size_t elem_ = 1, completed_ = 0;
  bool stream_output_ = false;  // copies into the output use streaming stores
  std::vector<uint32_t> waiting_;
  std::vector<uint64_t> done_bytes_;  // received (sends: sent)
  std::vector<uint64_t> sent_bytes_;  // relays through links without in-place access: sent on
  std::span<Link* const> links_;
  std::vector<pollfd> poll_fds_;
  std::vector<Carry> carry_;
  std::vector<size_t> send_head_, recv_head_;
  std::vector<uint8_t> copy_done_;
  std::vector<std::byte> bounce_ = std::vector<std::byte>(64 << 10);  // aligned by operator new
};

// One-shot convenience: plan and run (tests, rare calls).
Status execute(const Schedule& schedule, const CollectiveArgs& args, const ExecBuffers& buffers,
               std::span<Link* const> links, const ExecOptions& options = {});

}  // namespace xm::ccl
