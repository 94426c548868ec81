// Faults injected into a running testbed, each recorded with how to undo it
// (runtime_dir/faults.json); undo_all puts the testbed back as deployed.
//
// Miswiring and misconfiguration, what `xm ops validate` must find: cables swapped (on
// one ToR, across rails, at a host), unplugged, extra or on the wrong switch; a wrong MTU
// or address; a BGP session shut; an uplink left out of ECMP. A re-cable moves and
// renames the ToR ends of the veth cables, as a technician moves plugs.
//
// Data-plane faults, what the monitor and controller must locate, on one end of a cable
// ("h3/nic1", "tor1:h3-nic1", "tor1:spine0", "spine0:tor1"):
//   loss        random loss both ways through the end (nftables numgen; this kernel has
//               no netem): value the rate, "1%"
//   blackhole   the end drops, on transmit, the fraction `value` ("50%") of 5-tuples, by
//               a hash of the 5-tuple, as a corrupt ECMP or forwarding entry does; BGP and
//               BFD pass, so routing does not notice
//   degraded    the cable runs at `value` ("10%" of its rate, or "40mbit"), both ways
//   flap        the end goes down and up every `value` seconds (default 4), until undone
//   link-down   the end's port goes down (a switch port, or a NIC's cable at its ToR)
//   nic-down    a host's NIC goes down ("h3/nic1")
//   switch-down every port of a switch ("tor1", "spine0") goes down
#pragma once

#include <string>

#include "util/result.h"

namespace xm::testbed {

enum class FaultKind : uint8_t {
  kSwap,         // at, with: two ToR ports "tor1:h3-nic1" (same ToR, or two rails' ToRs)
  kSwapNics,     // at, with: a host's two NICs "h3/nic1", "h3/nic2" (their cables swapped)
  kUnplug,       // at: a NIC "h3/nic1" or a ToR uplink "tor1:spine0"
  kExtra,        // at, with: two switches, "tor1", "tor2": a cable between spare ports
  kWrongSwitch,  // at: a NIC "h3/nic1"; with: the switch its cable goes to instead
  kMtu,          // at: a NIC "h3/nic1"; value: the MTU
  kAddress,      // at: a NIC "h3/nic1"; value: the address it gets instead, "10.77.1.40/24"
  kBgpDown,      // at: a ToR uplink "tor1:spine0": its BGP session shut
  kEcmp,         // at: a ToR "tor1": one path per prefix (maximum-paths 1)
  kLoss,         // at: a cable end; value: "1%"
  kBlackhole,    // at: a cable end; value: "50%" of 5-tuples
  kDegraded,     // at: a cable end; value: "10%" or a tc rate
  kFlap,         // at: a cable end; value: seconds per down-up cycle
  kLinkDown,     // at: a cable end ("h3/nic1": its ToR's port)
  kNicDown,      // at: a NIC "h3/nic1"
  kSwitchDown,   // at: a switch "tor1"
};
// Of the kinds: those `xm ops validate` is for (swap ... ecmp), and the data-plane rest.
bool is_miswire(FaultKind kind);
const char* to_string(FaultKind kind);
Result<FaultKind> parse_fault_kind(const std::string& text);

struct InjectedFault {
  FaultKind kind = FaultKind::kSwap;
  std::string at, with, value;
};

// Injects one fault into testbed `name`; a line saying what was done.
Result<std::string> inject(const std::string& name, const InjectedFault& fault);
// Undoes every injected fault, newest first; how many.
Result<size_t> undo_all(const std::string& name);

}  // namespace xm::testbed
