// Measuring the tuner's cost model on the job's own links, once, when a communicator
// starts: every rank sends to a partner and receives from another at the same time, in
// three patterns — around the host (shared memory), around a rail (local rank l of
// every host), and across rails (host h rank l to host h+1 rank l+1, through the
// spine) — first a chain of small messages (latency), then one large one (bandwidth).
// Every rank contributes its timings; all take the slowest, so all hold the same model
// and every tuner decision agrees across ranks.
#pragma once

#include <span>

#include "ccl/bootstrap/bootstrap.h"
#include "ccl/executor.h"
#include "ccl/schedules.h"

namespace xm::ccl {

struct CalibrationContext {
  int rank = 0;
  const RankLayout* layout = nullptr;
  std::span<Link* const> links;
  Executor* executor = nullptr;
  BootstrapClient* bootstrap = nullptr;
  ExecOptions options;
  net::Clock::time_point deadline;
};

Result<CostModel> calibrate(const CalibrationContext& c);

}  // namespace xm::ccl
