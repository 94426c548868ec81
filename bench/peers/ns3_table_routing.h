// Forwarding for ns3_fabric's switches as the HPCC simulator's switches do it: a table
// from destination host to the links that lie on a shortest path to it, one of them
// picked at random for every packet (packet spraying, what ns-3's own
// Ipv4GlobalRouting does with RandomEcmpRouting). Hosts have one default route.
//
// Why not Ipv4GlobalRouting: its lookup walks every route of the node (hundreds per
// switch on this fabric) for each packet at each hop, a cost the HPCC simulator does not
// pay. Charging it to ns-3 would flatter us; `ns3_fabric --routing global` still runs it.
#pragma once

#include <ns3/ipv4-route.h>
#include <ns3/ipv4-routing-protocol.h>
#include <ns3/ipv4.h>

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace xm_bench {

class TableRouting final : public ns3::Ipv4RoutingProtocol {
 public:
  // Host index of each host address (Ipv4Address::Get()), shared by every router.
  using HostIndex = std::unordered_map<uint32_t, uint32_t>;

  // A switch: routes[h] = one route per link on a shortest path to host h.
  TableRouting(const HostIndex& hosts, std::vector<std::vector<ns3::Ptr<ns3::Ipv4Route>>> routes, uint64_t seed);
  // A host: everything leaves by its one link.
  explicit TableRouting(ns3::Ptr<ns3::Ipv4Route> uplink);

  ns3::Ptr<ns3::Ipv4Route> RouteOutput(ns3::Ptr<ns3::Packet> p, const ns3::Ipv4Header& header,
                                       ns3::Ptr<ns3::NetDevice> oif, ns3::Socket::SocketErrno& err) override;
  bool RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header, ns3::Ptr<const ns3::NetDevice> idev,
                  UnicastForwardCallback ucb, MulticastForwardCallback mcb, LocalDeliverCallback lcb,
                  ErrorCallback ecb) override;
  void NotifyInterfaceUp(uint32_t) override {}
  void NotifyInterfaceDown(uint32_t) override {}
  void NotifyAddAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void NotifyRemoveAddress(uint32_t, ns3::Ipv4InterfaceAddress) override {}
  void SetIpv4(ns3::Ptr<ns3::Ipv4> ipv4) override { ipv4_ = ipv4; }
  void PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream, ns3::Time::Unit unit) const override;

 private:
  ns3::Ptr<ns3::Ipv4Route> next(ns3::Ipv4Address destination);

  const HostIndex* hosts_ = nullptr;
  std::vector<std::vector<ns3::Ptr<ns3::Ipv4Route>>> routes_;
  ns3::Ptr<ns3::Ipv4Route> uplink_;
  ns3::Ptr<ns3::Ipv4> ipv4_;
  uint64_t rng_ = 1;  // xorshift64: spraying needs no better, and it costs ns-3 nothing
};

}  // namespace xm_bench
