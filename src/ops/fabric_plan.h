// The deployment plan of a cluster: every device, port, cable, address and routing
// identity, computed from a cluster spec alone. Plain data, no system call; render.h
// turns it into files, the testbed deploys it, validate compares the wired cluster with
// it. Same spec and options, same plan, byte for byte.
//
// Names (ports are unique within their device, and name the far end):
//
//   host s        h<s>                 ports: the spec's NIC names ("nic0", or "nic0p1"
//                                      for port 1 of a multi-port NIC)
//   ToR           tor<slot>            "s<k>-" prefix with several segments, "p<k>-" with
//                                      several planes; down ports "<host>-<port>"
//                                      ("h3-nic1"), up ports the spine's name ("spine0",
//                                      "spine0-1" for a second parallel link)
//   spine (agg)   spine<i>             "pod<k>-" prefix with several pods; down ports the
//                                      ToR's name, up ports the core's
//   core          core<i>              down ports the spine's name
//
// Addressing, for subnet octet S:
//   every ToR routes one host subnet (a /24, or larger for a ToR with more than 253
//   NIC ports) from 10.S.0.0 up: ToR t of a one-segment, one-plane rail fabric is
//   10.S.t.0/24, host i's NIC on it 10.S.t.(i+1), the ToR's gateway 10.S.t.254;
//   every switch-to-switch cable a /31 from 172.16.0.0/12 (the lower tier's end even);
//   every switch a loopback /32 from 192.168.0.0/16, its BGP router id.
// Routing (RFC 7938): eBGP on every fabric cable, one private 4-byte ASN per ToR, one
// per spine tier of a pod, one for the cores; ECMP over all uplinks; BFD on every session.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ops/ipv4.h"
#include "topo/spec.h"
#include "util/result.h"

namespace xm::ops {

inline constexpr uint32_t kNoRail = UINT32_MAX;

enum class Role : uint8_t { kHost, kTor, kSpine, kCore };
const char* to_string(Role role);
std::optional<Role> parse_role(std::string_view text);

// Tier of a cable: 0 host-ToR, 1 ToR-spine, 2 spine-core.
const char* tier_name(uint32_t tier);

struct Port {
  std::string name;
  uint32_t rail = kNoRail;  // host NIC ports and the ToR ports facing them
  double gbps = 0;
  std::optional<Prefix> address;  // the port's own address (hosts, /31 fabric links)
  std::string peer_device, peer_port;
};

// The host subnet a ToR routes: its bridge of host-facing ports holds the gateway.
struct HostSubnet {
  Prefix prefix;
  Ipv4 gateway;
  std::string bridge;  // "rail<r>", or "hosts" on a conventional (Clos) ToR
};

struct Device {
  std::string name;
  Role role = Role::kHost;
  uint32_t plane = 0;
  uint32_t group = 0;   // host: its segment; ToR: segment; spine: pod; core: group
  uint32_t rail = kNoRail;  // a rail-optimized ToR's rail
  uint32_t asn = 0;     // switches
  Ipv4 loopback;        // switches: also the BGP router id
  std::optional<HostSubnet> subnet;  // ToRs
  std::vector<Port> ports;

  const Port* find_port(std::string_view port) const;
};

struct Endpoint {
  std::string device, port;
  bool operator==(const Endpoint&) const = default;
  auto operator<=>(const Endpoint&) const = default;
};

struct Cable {
  uint32_t id = 0;
  uint32_t tier = 0;
  uint32_t rail = kNoRail;  // host-ToR cables
  Endpoint a;  // the end nearer the hosts
  Endpoint b;
  double gbps = 0;
  bool operator==(const Cable&) const = default;
};

struct QosOptions {
  uint32_t pfc_priority = 3;  // the lossless priority RoCE traffic rides
  uint32_t dscp = 26;         // RoCE's DSCP (traffic class = dscp << 2, ECN-capable)
};

struct PlanOptions {
  uint32_t subnet = 77;  // S in 10.S.0.0
  uint32_t mtu = 9000;
  uint32_t bfd_interval_ms = 100;  // transmit and receive; a session is down after 3
  QosOptions qos;
};

struct FabricPlan {
  topo::ClusterSpec spec;
  PlanOptions options;
  std::vector<Device> devices;  // hosts, ToRs, spines, cores; each in index order
  std::vector<Cable> cables;    // host-ToR, ToR-spine, spine-core

  const Device* find(std::string_view device) const;
  std::vector<const Device*> of_role(Role role) const;

 private:
  friend Result<FabricPlan> make_plan(const topo::ClusterSpec&, const PlanOptions&);
  std::map<std::string, size_t, std::less<>> index_;
};

// Lays out the cluster. Errors name the spec field or option that cannot be met (the
// spec's own checks, and address pools too small for the fabric).
Result<FabricPlan> make_plan(const topo::ClusterSpec& spec, const PlanOptions& options);

// Routing table of rail r on a host (one per rail, chosen by source address), and the
// priority of its rule. The testbed and the host configuration share them.
inline uint32_t rail_table(uint32_t rail) { return 100 + rail; }
inline uint32_t rail_rule_priority(uint32_t rail) { return 1000 + rail; }

}  // namespace xm::ops
