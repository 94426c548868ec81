// Runs one rank's schedule over its links until every step is done.
//
// Contract: blocks the calling thread until the collective completes, a link fails,
// or `timeout` passes without the collective finishing (an error, never a hang).
// Buffers are the caller's; nothing is allocated per byte moved.
#pragma once

#include <atomic>
#include <chrono>
#include <vector>
#include <cstddef>
#include <span>

#include "ccl/link.h"
#include "ccl/schedule.h"
#include "util/result.h"

namespace xm::ccl {

struct ExecBuffers {
  std::byte* input = nullptr;
  std::byte* output = nullptr;
  std::byte* scratch = nullptr;  // at least schedule.scratch_elements elements
  std::vector<std::byte*> user;  // Buffer::kUser + k
};

struct ExecOptions {
  std::chrono::milliseconds timeout{30000};
  const std::atomic<bool>* cancel = nullptr;  // set by another thread: stop with an error
};

// links[p] is the link to rank p (unused for this rank itself).
Status execute(const Schedule& schedule, const CollectiveArgs& args, const ExecBuffers& buffers,
               std::span<Link* const> links, const ExecOptions& options = {});

}  // namespace xm::ccl
