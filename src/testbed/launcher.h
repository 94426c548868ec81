// `xm testbed run`: a job of K ranks per host, each started inside its host's namespace
// with the environment torchrun and xccl expect.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

enum class RailMode : uint8_t {
  kAll,  // every NIC of the host, each weighted by its rate
  kOwn,  // NIC (local rank mod NICs) only: the rank owns one rail, as a GPU does its NIC
  kOwnSpare,  // that NIC, then the host's others as spares (XCCL_RAILS "/spare"): used when it fails
};

struct RunOptions {
  uint32_t ranks_per_host = 1;
  RailMode rails = RailMode::kAll;
  double timeout_s = 0;  // 0: none
  bool prefix = false;   // "[rank N] " before every line of output
  std::string output;    // append the output, prefixed, and the launcher's messages to this file instead of stdout, stderr
  const std::atomic<bool>* stop = nullptr;  // once true, the ranks are stopped and the job's status is 0
  std::vector<std::string> command;
};

using Env = std::vector<std::pair<std::string, std::string>>;

// What rank (host, local) gets, in this order:
//   RANK = host × K + local, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE = K,
//   NODE_RANK = host, MASTER_ADDR = host 0's first NIC, MASTER_PORT,
//   XCCL_SECRET, XCCL_RAILS = "addr@gbps,..." (kAll: every NIC; kOwn: one; kOwnSpare: one, then the others marked /spare),
//   XM_TESTBED = name, XM_TESTBED_HOST = host index, XM_TESTBED_NETNS,
//   XM_TESTBED_RAILS = the rail index of each XCCL_RAILS entry, comma-separated,
//   XCCL_RAIL_ADVICE = the monitor's rail advice (rail_advice_path; absent while no controller runs).
Env rank_env(const Plan& plan, uint32_t host, uint32_t local, const RunOptions& options, uint16_t master_port,
             const std::string& secret);

// A job secret as xccl wants it: 32 random bytes from the kernel, as 64 hex digits.
std::string new_secret();

// A port nobody listens on at host 0's first NIC address, inside its namespace.
Result<uint16_t> free_port(const Plan& plan);

// Starts every rank (`ip netns exec NETNS command...`, each in its own process group),
// forwards their output, and waits. Returns the job's exit status: 0 when every rank
// exited 0; otherwise the first non-zero status seen (128 + signal for a killed rank,
// 124 on timeout, 130 when interrupted), after stopping the other ranks (SIGTERM, then
// SIGKILL two seconds later). Error when the job cannot start. Needs root.
Result<int> run_job(const Plan& plan, const RunOptions& options);

}  // namespace xm::testbed
