// The state file: the plan of a testbed that is up, kept where `status`, `fault`, `run`
// and `down` find it (/run/xm-testbed/NAME.json; XM_TESTBED_STATE_DIR overrides the
// directory). Rates changed by `fault` are written back. The file is a record, not the
// truth: `down` also works without it, by namespace name.
#pragma once

#include <string>
#include <vector>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

std::string state_dir();
std::string state_path(const std::string& name);

std::string plan_to_json(const Plan& plan);
Result<Plan> plan_from_json(const std::string& text, const std::string& source);

// Writes atomically (temporary file, then rename).
Status save_state(const Plan& plan);
// Error "no testbed NAME ..." when there is no state file.
Result<Plan> load_state(const std::string& name);
// Removes the state file if present.
void remove_state(const std::string& name);

// Names of the testbeds with a state file.
std::vector<std::string> state_names();

// Holds an exclusive lock on the state directory for the lifetime of the object, so
// that two commands do not change testbeds at the same time.
class StateLock {
 public:
  static Result<StateLock> acquire();
  StateLock(StateLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  StateLock& operator=(StateLock&&) = delete;
  ~StateLock();

 private:
  explicit StateLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace xm::testbed
