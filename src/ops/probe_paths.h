// Which links each probe crosses: the request from the prober's NIC to its peer and the
// reply back, hop by hop over the plan's cables. A rail pair stays under its ToR; a
// cross-rail probe goes up through a spine the ToR's ECMP hash picks for its 5-tuple,
// so at every switch the path asks the switch which port it forwards that 5-tuple out
// of (on Linux what `ip route get DST from SRC iif IN ipproto udp sport S dport D` asks,
// route_query.h: the multipath hash the forwarding path uses; a switch ASIC's hash
// calculator elsewhere).
// Paths change when routing does: the controller traces them again every few seconds.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "ops/route_query.h"
#include "testbed/plan.h"
#include "util/result.h"

namespace xm::ops {

// A cable in one direction: 2 * cable id, + 1 from its b end to its a end (down, toward
// the hosts).
using DirectedLink = uint32_t;
inline DirectedLink directed(uint32_t cable, bool from_b) { return 2 * cable + (from_b ? 1 : 0); }
inline uint32_t cable_of(DirectedLink l) { return l / 2; }
inline bool from_b(DirectedLink l) { return l % 2 == 1; }
inline DirectedLink reverse(DirectedLink l) { return l ^ 1; }

// One of an agent's probe flows, by its metric labels.
struct ProbeFlow {
  std::string host, nic, peer_host, peer_nic;
  uint32_t flow = 0;  // the 5-tuple: source port probe_port + 1 + flow, to probe_port
};

struct ProbePath {
  std::vector<DirectedLink> request, reply;
  bool complete = false;  // both reached their end (false: a hop had no route)
};

// What a switch forwards a packet out of: for each query, the port name ("" when it has
// no route). Asked once per switch per hop.
using RouteLookup =
    std::function<Result<std::vector<std::string>>(const std::string& device, const std::vector<RouteQuery>& queries)>;

// The cables of the plan by their ends.
class CableIndex {
 public:
  explicit CableIndex(const FabricPlan& plan);
  // The cable with an end at (device, port), and whether that end is its b end.
  const Cable* at(const std::string& device, const std::string& port, bool* is_b = nullptr) const;
  // The host port that holds `address`, or nullptr.
  const Endpoint* host_port(Ipv4 address) const;
  // "h3/nic1 - tor1:h3-nic1", or one direction "tor1:spine0 -> spine0:tor1".
  std::string name(uint32_t cable) const;
  std::string name(DirectedLink link, bool directed) const;

 private:
  const FabricPlan& plan_;
  std::map<std::pair<std::string, std::string>, std::pair<uint32_t, bool>> ends_;
  std::map<uint32_t, Endpoint> hosts_by_address_;
};

// Traces every flow's request and reply; paths[i] is flows[i]'s.
Result<std::vector<ProbePath>> trace_probe_paths(const FabricPlan& plan, const std::vector<ProbeFlow>& flows,
                                                 uint16_t probe_port, const RouteLookup& lookup);

// Asks the testbed's switches' kernels (route_query.h: one netlink socket per switch and hop).
RouteLookup testbed_route_lookup(const testbed::Plan& plan);

// "h3/nic1" for a host port, "tor1:spine0" for a switch port.
std::string port_name(const FabricPlan& plan, const Endpoint& end);

}  // namespace xm::ops
