#include "ns3_table_routing.h"

#include <ns3/output-stream-wrapper.h>

#include <utility>

namespace xm_bench {

TableRouting::TableRouting(const HostIndex& hosts, std::vector<std::vector<ns3::Ptr<ns3::Ipv4Route>>> routes,
                           uint64_t seed)
    : hosts_(&hosts), routes_(std::move(routes)), rng_(seed | 1) {}

TableRouting::TableRouting(ns3::Ptr<ns3::Ipv4Route> uplink) : uplink_(std::move(uplink)) {}

ns3::Ptr<ns3::Ipv4Route> TableRouting::next(ns3::Ipv4Address destination) {
  if (uplink_) return uplink_;
  const auto it = hosts_->find(destination.Get());
  if (it == hosts_->end()) return nullptr;
  const std::vector<ns3::Ptr<ns3::Ipv4Route>>& choices = routes_[it->second];
  if (choices.empty()) return nullptr;
  rng_ ^= rng_ << 13, rng_ ^= rng_ >> 7, rng_ ^= rng_ << 17;
  return choices[rng_ % choices.size()];
}

ns3::Ptr<ns3::Ipv4Route> TableRouting::RouteOutput(ns3::Ptr<ns3::Packet>, const ns3::Ipv4Header& header,
                                                   ns3::Ptr<ns3::NetDevice>, ns3::Socket::SocketErrno& err) {
  ns3::Ptr<ns3::Ipv4Route> route = next(header.GetDestination());
  err = route ? ns3::Socket::ERROR_NOTERROR : ns3::Socket::ERROR_NOROUTETOHOST;
  return route;
}

bool TableRouting::RouteInput(ns3::Ptr<const ns3::Packet> p, const ns3::Ipv4Header& header,
                              ns3::Ptr<const ns3::NetDevice> idev, UnicastForwardCallback ucb, MulticastForwardCallback,
                              LocalDeliverCallback lcb, ErrorCallback) {
  // Only hosts are destinations, so a switch never delivers locally: skipping the check
  // (a walk over its interfaces) keeps ns-3's per-hop cost at its minimum.
  if (uplink_) {
    const int32_t iif = ipv4_->GetInterfaceForDevice(idev);
    if (!ipv4_->IsDestinationAddress(header.GetDestination(), uint32_t(iif))) return false;
    lcb(p, header, uint32_t(iif));
    return true;
  }
  ns3::Ptr<ns3::Ipv4Route> route = next(header.GetDestination());
  if (!route) return false;
  ucb(route, p, header);
  return true;
}

void TableRouting::PrintRoutingTable(ns3::Ptr<ns3::OutputStreamWrapper> stream, ns3::Time::Unit) const {
  *stream->GetStream() << (uplink_ ? "host: one default route\n" : "switch: per-destination next hops\n");
}

}  // namespace xm_bench
