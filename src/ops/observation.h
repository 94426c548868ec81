// What a cluster looks like from its devices: interfaces (state, MTU, addresses), LLDP
// neighbours, BGP sessions and routes, as the devices' own tools print them. The
// parsers are pure, so validate can be tested on any output; collect.h gathers the
// output from a live testbed.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/ipv4.h"
#include "util/result.h"

namespace xm::ops {

struct Interface {
  bool admin_up = false;
  bool carrier = false;  // LOWER_UP
  uint32_t mtu = 0;
  std::vector<Prefix> addresses;  // IPv4
  std::string master;             // the bridge it is a port of
};

struct Neighbour {
  std::string sysname, port;  // LLDP system name and port id
};

struct DeviceView {
  std::map<std::string, Interface> interfaces;
  std::map<std::string, Neighbour> lldp;     // local interface -> neighbour
  std::string lldp_error;                    // the LLDP agent did not answer: why
  std::map<std::string, std::string> bgp;    // peer address -> session state
  std::map<std::string, std::vector<std::string>> routes;  // destination -> next-hop interfaces
};

using Observation = std::map<std::string, DeviceView>;  // by device name

// `ip -j address show`
Result<std::map<std::string, Interface>> parse_ip_addresses(const std::string& json, const std::string& source);
// `lldpcli -f json show neighbors` (one neighbour per interface: the newest)
Result<std::map<std::string, Neighbour>> parse_lldp_neighbours(const std::string& json, const std::string& source);
// vtysh `show bgp summary json`
Result<std::map<std::string, std::string>> parse_bgp_summary(const std::string& json, const std::string& source);
// `ip -j route show`
Result<std::map<std::string, std::vector<std::string>>> parse_routes(const std::string& json, const std::string& source);

}  // namespace xm::ops
