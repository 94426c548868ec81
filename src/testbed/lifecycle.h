// Bringing testbeds up and down, and faults on their links. Every function here needs
// root (see is_root()) and takes the state lock while it changes anything.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

// Builds the testbed of `layout`: writes its fabric plan, builds the namespaces and
// cables, starts FRR and lldpd, and returns once every ToR routes to every other rail
// over all its uplinks. A testbed of the same name (its state file or any of its
// namespaces) is an error, unless `replace`, which removes it first. On failure what was
// built is removed again and the error names the command that failed.
// `stages`, when given, receives each stage's seconds: cables (namespaces, veths,
// addresses, shaping), daemons (FRR and lldpd started), bgp (converged).
struct UpStages {
  double cables_s = 0, daemons_s = 0, bgp_s = 0;
};
Status up(const Layout& layout, bool replace, UpStages* stages = nullptr);

struct Removed {
  std::vector<std::string> namespaces;  // deleted
  size_t processes_killed = 0;          // still running inside them
  bool state_file = false;              // there was one
};

// Removes testbed `name` by its namespaces' prefix, whether or not its state file exists
// or its `up` finished: processes left inside are killed, the namespaces (and with them
// every link, bridge and qdisc) deleted, the state file removed. Nothing to remove is
// not an error.
Result<Removed> down(const std::string& name);

// Every testbed on the machine: by state file and by namespace name (xm-NAME-tor<r>,
// xm-NAME-spine<k>, xm-NAME-h<i>). The names removed.
Result<std::vector<std::string>> down_all();

// Testbeds that exist on the machine (state file or namespaces), sorted.
std::vector<std::string> existing_testbeds();

enum class FaultAction : uint8_t { kDown, kUp, kRate };

struct Fault {
  std::string link;                 // "h<i>/nic<r>", or empty for a spine link
  std::optional<uint32_t> spine;    // rail whose spine link
  FaultAction action = FaultAction::kDown;
  uint64_t rate_bps = 0;            // kRate
};

// Cuts (the ToR's port goes down, so the NIC or spine loses carrier), restores, or
// re-rates (both directions) one NIC's link, or every uplink of a rail's ToR, of testbed
// `name`. Returns a line saying what was done.
Result<std::string> apply_fault(const std::string& name, const Fault& fault);

}  // namespace xm::testbed
