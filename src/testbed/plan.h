// The plan of a testbed: every namespace, link, address and rate it consists of.
//
// A testbed deploys a fabric plan (ops/fabric_plan.h): every host and every switch of it
// becomes a network namespace, every cable a veth pair with `tc tbf` on both ends, and
// the switches route as the plan's FRR configuration says. This plan is plain data
// computed from a cluster spec and the command-line options, with no system call; `up`
// (lifecycle.h) writes the fabric plan's files and builds it, the state file (state.h)
// keeps this plan for `status`, `fault`, `run` and `down`. For testbed NAME, subnet
// octet S, host i and rail r:
//
//   namespaces   xm-NAME-h<i>, xm-NAME-tor<r>, xm-NAME-spine<k>: one per device
//   host i       NIC of rail r   10.S.r.(i+1)/24   MAC 02:78:6d:<r>:<i>:00
//   ToR of rail r  port h<i>-<nic> (bridged, gateway 10.S.r.254), port spine<k> (/31)
//   spine k      port tor<r> (/31)
//
// Only the namespaces are named in the root namespace; every link lives inside them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ops/fabric_plan.h"
#include "topo/spec.h"
#include "util/result.h"

namespace xm::testbed {

inline constexpr uint32_t kMaxHosts = 250;     // host addresses .1 … .250; .254 is the spine
inline constexpr uint32_t kMaxRail = 63;       // rail index: third octet, table 100 + rail
inline constexpr size_t kMaxNameLength = 8;
inline constexpr uint32_t kDefaultSubnet = 77;
inline constexpr uint32_t kDefaultMtu = 9000;  // jumbo frames, as AI fabrics run

inline constexpr uint32_t kDefaultSpines = 2;

struct NicPlan {
  uint32_t rail = 0;
  std::string device;       // the NIC's name in the spec (e.g. "mlx5_0")
  std::string ifname;       // in the host namespace: the fabric plan's port name
  std::string tor;          // the switch it is cabled to, e.g. "tor1"
  std::string fabric_port;  // the ToR's port: "h<i>-<ifname>"
  std::string address;      // "10.S.r.(i+1)"
  uint32_t prefix = 24;
  std::string mac;
  uint64_t rate_bps = 0;    // both directions
};

struct HostPlan {
  uint32_t index = 0;
  std::string name;   // "h<i>"
  std::string netns;  // "xm-NAME-h<i>"
  std::vector<NicPlan> nics;  // ascending rail
};

struct SwitchPlan {
  std::string name;   // "tor1", "spine0"
  std::string role;   // "tor" or "spine"
  std::string netns;  // "xm-NAME-tor1"
};

// One cable from a ToR up to a spine.
struct UplinkPlan {
  uint32_t rail = 0;  // the ToR's
  std::string tor, tor_port;      // "tor1", "spine0"
  std::string spine, spine_port;  // "spine0", "tor1"
  std::string address;            // the ToR end's, "172.16.0.2"
  uint64_t rate_bps = 0;          // both directions
};

// Rail r: its ToR and the subnet the ToR routes.
struct RailPlan {
  uint32_t rail = 0;
  std::string tor;      // "tor<r>"
  std::string bridge;   // in the ToR's namespace: "rail<r>"
  std::string address;  // the rail's gateway, "10.S.r.254"
};

struct Plan {
  std::string name;
  std::string source;  // where the spec came from, for status
  uint32_t subnet = kDefaultSubnet;
  uint32_t mtu = kDefaultMtu;
  std::vector<HostPlan> hosts;
  std::vector<SwitchPlan> switches;  // ToRs by rail, then spines
  std::vector<RailPlan> rails;       // ascending rail
  std::vector<UplinkPlan> uplinks;   // by ToR, then spine

  // "h<i>/nic<r>" (or "h<i>/<device>"); nullptr when there is no such NIC.
  const NicPlan* find_nic(std::string_view link, const HostPlan** host = nullptr) const;
  NicPlan* find_nic(std::string_view link, const HostPlan** host = nullptr);
  const RailPlan* find_rail(uint32_t rail) const;
  const SwitchPlan* find_switch(std::string_view name) const;
  std::vector<UplinkPlan*> uplinks_of_rail(uint32_t rail);
  std::vector<std::string> namespaces() const;  // switches, then hosts
  // The namespace of a host or switch by its name in the fabric plan.
  std::string netns_of(std::string_view device) const;
};

struct PlanOptions {
  std::string name = "tb";
  uint32_t subnet = kDefaultSubnet;
  uint32_t mtu = kDefaultMtu;
  uint64_t rate_bps = 0;        // 0: each NIC's spec speed scaled 1:1000 (400 Gbit/s -> 400mbit)
  uint64_t spine_rate_bps = 0;  // each ToR-spine link; 0: the ToR's NIC rates over its uplinks (non-blocking)
  uint32_t spines = kDefaultSpines;  // for a spec without a spine tier
};

// Testbed names: 1 to 8 characters of [a-z0-9], starting with a letter.
Status check_name(std::string_view name);

// The prefix every namespace of testbed `name` starts with: "xm-NAME-".
std::string netns_prefix(std::string_view name);

// A spec of `hosts` servers with `rails` NICs of 400 Gbit/s each, NIC r on rail r.
topo::ClusterSpec simple_spec(uint32_t hosts, uint32_t rails);

// The spec the testbed deploys: `spec` itself when it has a spine tier, else `spec` with
// `options.spines` spines, one cable from every ToR to each. Errors name what the testbed
// cannot emulate (several planes or segments, a core tier, several NICs on a rail).
Result<topo::ClusterSpec> testbed_spec(const topo::ClusterSpec& spec, const std::string& source,
                                       const PlanOptions& options);

// The fabric plan of testbed_spec(spec), and the testbed's layout of it.
struct Layout {
  Plan plan;
  ops::FabricPlan fabric;
};
Result<Layout> make_layout(const topo::ClusterSpec& spec, const std::string& source, const PlanOptions& options);
// The layout's testbed plan alone.
Result<Plan> make_plan(const topo::ClusterSpec& spec, const std::string& source, const PlanOptions& options);

// tc tbf parameters for a link of `rate_bps`: the bucket holds a whole 64 KiB GSO
// super-packet (veth hands tbf unsegmented TSO/GSO packets), the queue some milliseconds.
struct Tbf {
  uint64_t burst_bytes = 0;
  uint64_t limit_bytes = 0;
};
Tbf tbf_for(uint64_t rate_bps, uint32_t mtu);

}  // namespace xm::testbed
