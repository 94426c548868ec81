// Every XCCL_ setting in one place, read from the environment when a communicator is
// made. A malformed value is an error naming the variable, never a silent default.
// The fields below, with their comments, are the reference; docs/xccl.md repeats them.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

#include "ccl/tcp/rails.h"
#include "util/result.h"

namespace xm::ccl {

struct Settings {
  std::chrono::milliseconds timeout{30000};            // XCCL_TIMEOUT_MS: one operation
  std::chrono::milliseconds init_timeout{120000};      // XCCL_INIT_TIMEOUT_MS: joining
  size_t chunk_bytes = 0;                              // XCCL_CHUNK_BYTES: pipelining grain; 0 = by size
  size_t shm_fifo_bytes = 0;                           // XCCL_SHM_FIFO_BYTES: per peer, power of two; 0 = by ranks (shm_transport.h)
  bool shm_disable = false;                            // XCCL_SHM_DISABLE=1: sockets even on one host
  bool shm_cma = true;                                 // XCCL_SHM_CMA=0: no cross-memory reads of plain buffers
  bool cpu_spread = true;                              // XCCL_CPU_SPREAD=0: ranks sharing a CPU stay put
  bool runtime_connect = true;                         // XCCL_RUNTIME_CONNECT=0: every TCP peer connected at init
  std::string rails;                                   // XCCL_RAILS: addr[@gbps],... one per NIC
  std::string rail_advice;                             // XCCL_RAIL_ADVICE: rails to avoid (ccl/tcp/rail_advice.h)
  size_t tcp_stripe_bytes = kDefaultStripeBytes;       // XCCL_TCP_STRIPE_BYTES: unit of striping over rails
  size_t tcp_window_bytes = kDefaultWindowBytes;       // XCCL_TCP_WINDOW_BYTES: how far a sender runs ahead of its peer
  uint32_t tcp_sockets_per_rail = 1;                   // XCCL_TCP_SOCKETS_PER_RAIL: connections per rail, for ECMP
  RailPolicy rail_policy;                              // XCCL_RAIL_STALL_MS, _RETRY_MS, _HOLD_MS (ccl/tcp/rails.h)
  std::string algorithms;                              // XCCL_ALGO: forced choices (tuner.h)
  std::string bootstrap_addr = "127.0.0.1";            // XCCL_BOOTSTRAP_ADDR: where xcclGetUniqueId listens;
                                                       // unset: XCCL_RAILS's first address, else this
};

Result<Settings> settings_from_environment();

// Where a job launched by torchrun, mpirun or srun finds itself.
struct LaunchEnv {
  int rank = 0, ranks = 1, local_rank = 0;
  std::string master_addr;
  uint16_t master_port = 0;
  std::string launcher;  // "torchrun", "mpirun", "srun", "xccl"
  std::string secret_hex;
};

Result<LaunchEnv> launch_env_from_environment();

}  // namespace xm::ccl
