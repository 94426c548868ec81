// Bootstrap: how the ranks of a job find each other. One root (in the process that made
// the unique id, or rank 0 under torchrun/mpirun/srun) accepts every rank's
// authenticated connection and serves all-gathers of small blobs (addresses, shared
// memory names) over them. Connections without the job's secret are refused and logged.
#pragma once

#include <atomic>
#include <sys/types.h>

#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ccl/net/auth.h"
#include "ccl/net/socket.h"
#include "util/result.h"

namespace xm::ccl {

// What every rank must know to join: where the root listens and the job's secret.
struct JobId {
  net::Endpoint root;
  net::Secret secret;
  std::string encode() const;  // "xccl1 host:port secret-hex"
  static Result<JobId> decode(const std::string& text);
};

// The root's server thread. Destroying it closes every connection.
class BootstrapRoot {
 public:
  // Listens on host:port (0: any free port) and serves in a thread until every rank has
  // disconnected or `init_timeout` passes before all ranks joined.
  static Result<std::unique_ptr<BootstrapRoot>> start(const std::string& host, uint16_t port, const net::Secret& secret,
                                                      std::chrono::milliseconds init_timeout);
  // The same on a socket already listening at `at` (a rank's spare listener, published at
  // init, on which a shrunk communicator's survivors meet without a new unique id).
  static Result<std::unique_ptr<BootstrapRoot>> adopt(net::Fd listener, const net::Endpoint& at, const net::Secret& secret,
                                                      std::chrono::milliseconds init_timeout);
  ~BootstrapRoot();
  net::Endpoint endpoint() const { return endpoint_; }
  // Connections refused so far (stray or hostile peers).
  int refused() const { return refused_.load(); }
  // True in the process that started the root (not in a child forked from it).
  bool hosted_here() const;

 private:
  BootstrapRoot() = default;
  void serve(std::chrono::milliseconds init_timeout);
  int admit_ranks(net::Clock::time_point init_deadline);
  net::Fd listener_;
  net::Endpoint endpoint_;
  net::Secret secret_;
  std::atomic<int> refused_{0};
  std::atomic<bool> stop_{false};
  std::mutex clients_mu_;          // clients_ is filled by the thread, shut down by ~BootstrapRoot
  std::vector<net::Fd> clients_;
  // The serving thread exists only in the process that started it; a forked child
  // inherits this object but not the thread, and must neither join nor adopt it.
  pid_t owner_pid_ = 0;
  std::unique_ptr<std::thread> thread_;
};

// A rank's connection to the root.
class BootstrapClient {
 public:
  static Result<BootstrapClient> join(const JobId& job, int rank, int ranks, net::Clock::time_point deadline);
  // Every rank contributes a blob; every rank gets all of them, in rank order.
  Result<std::vector<std::string>> allgather(const std::string& blob, net::Clock::time_point deadline);
  Status barrier(net::Clock::time_point deadline);
  // The local address of the connection to the root: an address peers can reach.
  std::string local_address() const;

 private:
  net::Fd fd_;
  int rank_ = 0, ranks_ = 0;
};

}  // namespace xm::ccl
