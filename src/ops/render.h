// The plan as the files people and tools read: pure functions of the plan, so the same
// plan always gives the same bytes.
//
//   cabling.csv        every cable: both ends, tier, rail, speed
//   topology.dot       the cabling as Cumulus PTM's topology.dot ("dev":"port" -- ...)
//   devices.csv        every device: role, plane, group, rail, ASN, router id
//   addresses.csv      every address: NIC, gateway, fabric link, loopback
//   hosts/<h>.sh       a server's NICs, rail-affine routing and RoCE QoS, as commands
//   switches/<s>/interfaces   ports, MTU, host bridge and addresses (ifupdown2 form)
//   switches/<s>/frr.conf     BGP with ECMP and BFD (FRR)
#pragma once

#include <string>
#include <vector>

#include "ops/fabric_plan.h"

namespace xm::ops {

std::string cabling_csv(const FabricPlan& plan);
std::string topology_dot(const FabricPlan& plan);
std::string devices_csv(const FabricPlan& plan);
std::string addresses_csv(const FabricPlan& plan);

// One host NIC as the host configures it: its address, and the routing table that makes
// traffic from that address leave on it (same rail: the ToR's subnet; else the gateway).
struct HostNic {
  const Port* port = nullptr;
  Prefix address;
  Prefix subnet;
  Ipv4 gateway;
  uint32_t table = 0, rule_priority = 0;
};
// Precondition: `host` is a host of `plan`.
std::vector<HostNic> host_nics(const FabricPlan& plan, const Device& host);

// The sysctls a multi-NIC host needs: ARP answered only by the NIC holding the address,
// loose reverse-path filtering, and no route over a NIC without carrier.
std::vector<std::pair<std::string, std::string>> host_sysctls();

// What a host runs for one NIC, as `ip` commands without the leading "ip" (the form
// `ip -batch` reads): MTU and state, address, the rail's table (its subnet, the gateway
// for the rest, and "unreachable" under both, so a NIC without carrier fails fast
// instead of leaking into the main table), and the rule that selects it by source.
std::vector<std::string> host_nic_commands(const FabricPlan& plan, const HostNic& nic);

// What a switch runs once its ports exist, in the same form: loopback, fabric port
// addresses and MTU, and on a ToR the bridge of host ports holding the gateway.
std::vector<std::string> switch_commands(const FabricPlan& plan, const Device& sw);

std::string host_script(const FabricPlan& plan, const Device& host);
std::string switch_interfaces(const FabricPlan& plan, const Device& sw);
std::string frr_conf(const FabricPlan& plan, const Device& sw);

// The ECN-capable traffic class RoCE packets carry: DSCP << 2 | ECT(0).
inline uint32_t roce_traffic_class(const QosOptions& q) { return q.dscp << 2 | 2; }

}  // namespace xm::ops
