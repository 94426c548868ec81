// A communicator: this rank's place in a job, its links to every peer, and a worker
// thread that runs the operations queued on it, in order.
//
// Contract: submit() is called by one application thread at a time and never blocks;
// the worker is the only thread that touches the links. A failed operation puts the
// communicator in a failed state (async_error) and fails everything queued after it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "ccl/bootstrap/bootstrap.h"
#include "ccl/executor.h"
#include "ccl/settings.h"
#include "ccl/shm/cpu_spread.h"
#include "ccl/shm/shm_transport.h"
#include "ccl/tcp/tcp_connector.h"
#include "sched/tuner.h"

namespace xm::ccl {

// Completion of one queued operation, shared by the worker and the waiting caller.
class RequestState {
 public:
  void finish(Status status);
  Status wait();
  bool done() const;
  Status status() const;

 private:
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  Status status_;
};

// One send or receive of a point-to-point group, in bytes.
struct PointToPoint {
  bool send = true;
  int peer = 0;
  std::byte* buffer = nullptr;
  size_t bytes = 0;
};

// A rank's own block of an uneven all-to-all, moved within its memory.
struct LocalCopy {
  const std::byte* from = nullptr;
  std::byte* to = nullptr;
  size_t bytes = 0;
};

struct Operation {
  CollectiveArgs args;                // a collective, unless `group` or `copies` is non-empty
  const std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::vector<PointToPoint> group;
  std::vector<LocalCopy> copies;      // run with the group
  std::shared_ptr<RequestState> request;  // made by submit(); blocking runs need none

  bool point_to_point() const { return !group.empty() || !copies.empty(); }
};

class Comm {
 public:
  // Joins the job as `rank` of `ranks`. `root`, if this process hosts the bootstrap
  // root, is kept alive as long as the communicator.
  static Result<std::unique_ptr<Comm>> create(const JobId& job, int rank, int ranks,
                                              std::unique_ptr<BootstrapRoot> root, const Settings& settings);
  ~Comm();  // finishes queued operations, then stops

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }
  const Settings& settings() const { return settings_; }

  // Queues `op`; its request reports completion.
  std::shared_ptr<RequestState> submit(Operation op);
  // Runs `op` and returns when it is done: on the calling thread when nothing is queued
  // (no hand-off to the worker, which costs microseconds), else after the queue.
  Status run_blocking(Operation op);
  // Fails queued and running operations and stops the worker.
  void abort();
  Status async_error() const;
  // A new communicator of the ranks not in `excluded` (ranks of this one), numbered in
  // order, made without a new unique id: the lowest survivor hosts the bootstrap on the
  // spare listener it published at init. Every survivor calls it with the same list.
  // Precondition: every excluded rank is in range, and this rank is not one of them.
  Result<std::unique_ptr<Comm>> shrink(const std::vector<int>& excluded);
  // A new communicator of `members` (ranks of this one, this rank among them), numbered
  // in the list's order, meeting at the first member's spare listener: what shrink and
  // split both make. Every member calls it with the same list.
  Result<std::unique_ptr<Comm>> regroup(const std::vector<int>& members);
  // The TCP link to `peer` once connected, else null; its rail figures are safe to read
  // from any thread.
  const TcpLink* tcp_link(int peer) const { return tcp_ ? tcp_->find(peer) : nullptr; }

 private:
  Comm() = default;
  Status connect(const JobId& job);
  Status tune();  // XCCL_ALGO, then the cost model measured over the links
  Status connect_tcp_peers(const JobId& job, const std::vector<std::string>& blobs, const std::vector<int>& peers,
                           std::vector<Rail> rails, std::vector<net::Fd> listeners, net::Clock::time_point deadline);
  ExecOptions exec_options();  // how this communicator's collectives wait
  void work();
  Status run(Operation& op);

  int rank_ = 0, ranks_ = 1;
  Settings settings_;
  net::Secret secret_;
  net::Fd rendezvous_;                       // the spare listener a shrink would meet on
  std::vector<net::Endpoint> rendezvous_at_;  // every rank's, by rank
  std::unique_ptr<BootstrapRoot> root_;
  std::unique_ptr<BootstrapClient> bootstrap_;
  std::unique_ptr<ShmSegment> own_segment_;
  std::unique_ptr<CpuSpread> spread_;  // the host's ranks move off a shared CPU
  std::vector<std::unique_ptr<ShmSegment>> peer_segments_;
  std::unique_ptr<TcpConnector> tcp_;  // TCP peers' connections, made on demand; outlives links_, which use it
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<Link*> link_table_;  // by peer rank; null for self
  std::vector<std::string> peer_names_;  // by rank, as errors name them
  RankLayout layout_;  // hosts and local indices, for rail-aware algorithms
  // What the tuner decides by besides the call: settings, the cost model measured at
  // start-up (calibrate.h), whether every link is in memory.
  Tuning tuning_;
  std::vector<std::byte> scratch_;  // grown once, reused: fresh pages cost more than copies
  RegisteredScratch shared_scratch_;  // the same, for schedules whose peers read scratch
  Result<std::byte*> scratch_for(const Schedule& schedule, DataType type);  // grown as needed
  bool oversubscribed_ = false;     // more ranks on this host than cores
  Executor executor_;               // used by one thread at a time (busy_)
  // Plans of recent calls: training loops and benchmarks repeat the same few calls.
  struct CachedPlan {
    CollectiveArgs args;
    std::unique_ptr<Plan> plan;
  };
  std::vector<CachedPlan> plans_;
  const Plan& plan_for(const CollectiveArgs& args);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Operation> queue_;
  bool stopping_ = false;
  bool busy_ = false;  // an operation is running (on the worker or a blocking caller)
  Status failed_;
  std::atomic<bool> cancel_{false};
  std::thread worker_;
};

}  // namespace xm::ccl
