// Healing: what the controller does about a fault it has located and can route around.
//
// A cable between switches that loses packets, black-holes some flows, runs slow, flaps
// or has the wrong MTU is drained: its BGP sessions are shut at both ends. FRR tells the
// peer at once (a Cease), both withdraw the routes learnt over the session and ECMP
// carries on over the other paths, well within a second. (A cable without carrier, a
// port shut or a switch down, routing takes out by itself.) A switch keeps at least one
// uplink: a drain that would take its last is not made, and says so.
//
// A host's cable or NIC, or a rail's ToR, cannot be routed around in a rail-optimized
// fabric (a host has one NIC per rail): the rail is advised against instead. The advice
// is a file of addresses, one per line with the reason after a '#', that xccl jobs read
// (XCCL_RAIL_ADVICE) and written whole, by rename, whenever it changes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "ops/localize.h"
#include "testbed/plan.h"
#include "util/result.h"

namespace xm::ops {

// One end's view of a BGP session: `device` (AS `asn`) peers with `neighbour`.
struct BgpSession {
  std::string device;
  uint32_t asn = 0;
  std::string neighbour;  // the far end's address on the cable
  bool operator==(const BgpSession&) const = default;
  auto operator<=>(const BgpSession&) const = default;
};

struct RailAdvice {
  std::string address;  // a host NIC's address
  std::string nic;      // "h3/nic1"
  bool operator==(const RailAdvice&) const = default;
};

struct DrainedCable {
  uint32_t cable = 0;                // the plan's cable id
  std::string name;                  // "tor0:spine1 - spine1:tor0"
  std::vector<BgpSession> sessions;  // to shut: its two ends, less those shut already
};

// What healing one finding means.
struct HealPlan {
  std::vector<DrainedCable> drained;
  std::vector<RailAdvice> avoid;  // rails xccl should not use
  std::string kept;               // what was not drained, and why ("tor0's last uplink")
  bool empty() const { return drained.empty() && avoid.empty(); }
  std::vector<BgpSession> sessions() const;  // every drained cable's
};

// Plans the healing of `finding` given the sessions already shut (by other drains):
// which sessions to shut, which rails to advise against. Pure.
HealPlan plan_heal(const FabricPlan& plan, const Finding& finding, const std::vector<BgpSession>& already_shut);

// Shuts (`shut`) or reopens BGP sessions; `why` goes with a shutdown to the peer.
using BgpControl = std::function<Status(const std::vector<BgpSession>& sessions, bool shut, const std::string& why)>;
// Through vtysh on the testbed's switches, one call per device, the devices in parallel.
BgpControl testbed_bgp(const testbed::Plan& testbed);

// Writes the advice file (atomically): one address per line, "# nic: reason" after it.
Status write_rail_advice(const std::string& path, const std::vector<std::pair<RailAdvice, std::string>>& advice);

}  // namespace xm::ops
