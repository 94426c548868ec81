// Miswiring and misconfiguring a running testbed, the faults `xm ops validate` must
// find: cables swapped (on one ToR, across rails, at a host), unplugged, extra or on the
// wrong switch; a wrong MTU or address; a BGP session shut; an uplink left out of ECMP.
// A re-cable moves and renames the ToR ends of the veth cables, as a technician moves
// plugs. Every injection records how to undo it (runtime_dir/faults.json); undo_all
// puts the testbed back as deployed.
#pragma once

#include <string>

#include "util/result.h"

namespace xm::testbed {

enum class Miswire : uint8_t {
  kSwap,         // at, with: two ToR ports "tor1:h3-nic1" (same ToR, or two rails' ToRs)
  kSwapNics,     // at, with: a host's two NICs "h3/nic1", "h3/nic2" (their cables swapped)
  kUnplug,       // at: a NIC "h3/nic1" or a ToR uplink "tor1:spine0"
  kExtra,        // at, with: two switches, "tor1", "tor2": a cable between spare ports
  kWrongSwitch,  // at: a NIC "h3/nic1"; with: the switch its cable goes to instead
  kMtu,          // at: a NIC "h3/nic1"; value: the MTU
  kAddress,      // at: a NIC "h3/nic1"; value: the address it gets instead, "10.77.1.40/24"
  kBgpDown,      // at: a ToR uplink "tor1:spine0": its BGP session shut
  kEcmp,         // at: a ToR "tor1": one path per prefix (maximum-paths 1)
};
const char* to_string(Miswire kind);
Result<Miswire> parse_miswire(const std::string& text);

struct MiswireFault {
  Miswire kind = Miswire::kSwap;
  std::string at, with, value;
};

// Injects one fault into testbed `name`; a line saying what was done.
Result<std::string> inject(const std::string& name, const MiswireFault& fault);
// Undoes every injected fault, newest first; how many.
Result<size_t> undo_all(const std::string& name);

}  // namespace xm::testbed
