// The plan of a testbed: every namespace, link, address and rate it consists of.
//
// A plan is plain data computed from a cluster spec and the command-line options, with
// no system call; `up` (setup.h) turns it into commands, the state file (state.h) keeps
// it for `status`, `fault`, `run` and `down`. Naming and addressing, for testbed NAME,
// subnet octet S, host i and rail r:
//
//   namespaces   xm-NAME-h<i> (one per host), xm-NAME-fab (the ToRs), xm-NAME-spine
//   host i       nic<r>        10.S.r.(i+1)/24   MAC 02:78:6d:<r>:<i>:00
//   fabric       bridge tor<r> (rail r's ToR), ports h<i>-nic<r> and tor<r>-spine
//   spine        tor<r>        10.S.r.254/24     MAC 02:78:6d:<r>:fe:00
//
// Only the namespaces are named in the root namespace; every link lives inside them.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "topo/spec.h"
#include "util/result.h"

namespace xm::testbed {

inline constexpr uint32_t kMaxHosts = 250;     // host addresses .1 … .250; .254 is the spine
inline constexpr uint32_t kMaxRail = 63;       // rail index: third octet, table 100 + rail
inline constexpr size_t kMaxNameLength = 8;
inline constexpr uint32_t kDefaultSubnet = 77;
inline constexpr uint32_t kDefaultMtu = 9000;  // jumbo frames, as AI fabrics run

struct NicPlan {
  uint32_t rail = 0;
  std::string device;       // the NIC's name in the spec (e.g. "mlx5_0")
  std::string ifname;       // in the host namespace: "nic<r>"
  std::string fabric_port;  // the veth peer on the ToR bridge: "h<i>-nic<r>"
  std::string address;      // "10.S.r.(i+1)"
  std::string mac;
  uint64_t rate_bps = 0;    // both directions
};

struct HostPlan {
  uint32_t index = 0;
  std::string name;   // "h<i>"
  std::string netns;  // "xm-NAME-h<i>"
  std::vector<NicPlan> nics;  // ascending rail
};

// Rail r's ToR and its link to the spine router.
struct RailPlan {
  uint32_t rail = 0;
  std::string bridge;       // in the fabric namespace: "tor<r>"
  std::string uplink;       // bridge port toward the spine: "tor<r>-spine"
  std::string spine_ifname; // in the spine namespace: "tor<r>"
  std::string address;      // the rail's gateway, "10.S.r.254"
  std::string mac;
  uint64_t rate_bps = 0;    // the spine link, both directions
};

struct Plan {
  std::string name;
  std::string source;  // where the spec came from, for status
  uint32_t subnet = kDefaultSubnet;
  uint32_t mtu = kDefaultMtu;
  std::string fabric_netns, spine_netns;
  std::vector<HostPlan> hosts;
  std::vector<RailPlan> rails;  // ascending rail

  // "h<i>/nic<r>" (or "h<i>/<device>"); nullptr when there is no such NIC.
  const NicPlan* find_nic(std::string_view link, const HostPlan** host = nullptr) const;
  NicPlan* find_nic(std::string_view link, const HostPlan** host = nullptr);
  const RailPlan* find_rail(uint32_t rail) const;
  RailPlan* find_rail(uint32_t rail);
  std::vector<std::string> namespaces() const;  // fabric, spine, then hosts
};

struct PlanOptions {
  std::string name = "tb";
  uint32_t subnet = kDefaultSubnet;
  uint32_t mtu = kDefaultMtu;
  uint64_t rate_bps = 0;        // 0: each NIC's spec speed scaled 1:1000 (400 Gbit/s -> 400mbit)
  uint64_t spine_rate_bps = 0;  // 0: the sum of the rail's NIC rates (non-blocking)
};

// Testbed names: 1 to 8 characters of [a-z0-9], starting with a letter.
Status check_name(std::string_view name);

// The prefix every namespace of testbed `name` starts with: "xm-NAME-".
std::string netns_prefix(std::string_view name);

// A spec of `hosts` servers with `rails` NICs of 400 Gbit/s each, NIC r on rail r.
topo::ClusterSpec simple_spec(uint32_t hosts, uint32_t rails);

// Checks that the spec can be emulated (rail-optimized, at most one NIC per rail per
// server, limits above) and lays the testbed out.
Result<Plan> make_plan(const topo::ClusterSpec& spec, const std::string& source, const PlanOptions& options);

// tc tbf parameters for a link of `rate_bps`: the bucket holds a whole 64 KiB GSO
// super-packet (veth hands tbf unsegmented TSO/GSO packets), the queue some milliseconds.
struct Tbf {
  uint64_t burst_bytes = 0;
  uint64_t limit_bytes = 0;
};
Tbf tbf_for(uint64_t rate_bps, uint32_t mtu);

}  // namespace xm::testbed
