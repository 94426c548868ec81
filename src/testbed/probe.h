// A TCP probe between NICs of a testbed: the measurement behind its tests and the
// numbers in docs/testbed.md. Hidden command: `xm testbed probe`.
//
// Each flow is a receiver listening on the destination NIC's address inside its host's
// namespace and a sender bound to the source NIC's address inside its own, so the
// routing the testbed set up decides the path (same rail: one ToR; across rails: ToR,
// spine, ToR). Needs root (it enters namespaces). Blocks until every flow finished or
// failed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

struct FlowSpec {
  std::string from, to;  // "h<i>/nic<r>"
};

struct FlowResult {
  std::string from, to;  // as given
  std::string src, dst;  // addresses
  uint64_t bytes = 0;
  double seconds = 0;    // from connect until the receiver confirmed the last byte
  double mbit_per_s() const { return seconds > 0 ? static_cast<double>(bytes) * 8 / seconds / 1e6 : 0; }
};

// Runs all flows at once, `bytes` each. Error (naming the flow) when one cannot connect,
// stalls, or does not finish within `timeout_s`.
Result<std::vector<FlowResult>> probe(const Plan& plan, const std::vector<FlowSpec>& flows, uint64_t bytes,
                                      double timeout_s);

std::string probe_json(const std::vector<FlowResult>& results);
std::string probe_text(const std::vector<FlowResult>& results);

}  // namespace xm::testbed
