#include "ops/render.h"

#include <sstream>

#include "util/format.h"

namespace xm::ops {
namespace {

std::string rail_text(uint32_t rail) { return rail == kNoRail ? "" : std::to_string(rail); }

// Bridge members of a ToR: its host-facing ports.
std::vector<const Port*> host_ports(const Device& sw) {
  std::vector<const Port*> out;
  for (const Port& p : sw.ports)
    if (!p.address) out.push_back(&p);
  return out;
}

std::vector<const Port*> fabric_ports(const Device& sw) {
  std::vector<const Port*> out;
  for (const Port& p : sw.ports)
    if (p.address) out.push_back(&p);
  return out;
}

std::string header(const FabricPlan& plan, const std::string& comment, const std::string& what) {
  return comment + " " + what + "\n" + comment + " Written by `xm ops plan` from cluster spec \"" + plan.spec.name +
         "\"; do not edit: change the spec and plan again.\n";
}

}  // namespace

std::string cabling_csv(const FabricPlan& plan) {
  std::ostringstream o;
  o << "cable,tier,rail,a_device,a_port,b_device,b_port,gbps\n";
  for (const Cable& c : plan.cables)
    o << c.id << ',' << tier_name(c.tier) << ',' << rail_text(c.rail) << ',' << c.a.device << ',' << c.a.port << ','
      << c.b.device << ',' << c.b.port << ',' << trimmed(c.gbps, 6) << '\n';
  return o.str();
}

std::string topology_dot(const FabricPlan& plan) {
  std::ostringstream o;
  o << "graph \"" << plan.spec.name << "\" {\n";
  for (const Cable& c : plan.cables)
    o << "  \"" << c.a.device << "\":\"" << c.a.port << "\" -- \"" << c.b.device << "\":\"" << c.b.port << "\";\n";
  o << "}\n";
  return o.str();
}

std::string devices_csv(const FabricPlan& plan) {
  std::ostringstream o;
  o << "device,role,plane,group,rail,asn,router_id\n";
  for (const Device& d : plan.devices) {
    bool sw = d.role != Role::kHost;
    o << d.name << ',' << to_string(d.role) << ',' << d.plane << ',' << d.group << ',' << rail_text(d.rail) << ','
      << (sw ? std::to_string(d.asn) : "") << ',' << (sw ? to_string(d.loopback) : "") << '\n';
  }
  return o.str();
}

std::string addresses_csv(const FabricPlan& plan) {
  std::ostringstream o;
  o << "device,interface,address,purpose\n";
  for (const Device& d : plan.devices) {
    if (d.role != Role::kHost) o << d.name << ",lo," << to_string(Prefix{d.loopback, 32}) << ",loopback\n";
    if (d.subnet)
      o << d.name << ',' << d.subnet->bridge << ',' << to_string(Prefix{d.subnet->gateway, d.subnet->prefix.length})
        << ",gateway\n";
    for (const Port& p : d.ports)
      if (p.address) o << d.name << ',' << p.name << ',' << to_string(*p.address) << ',' << (d.role == Role::kHost ? "nic" : "link") << '\n';
  }
  return o.str();
}

std::vector<HostNic> host_nics(const FabricPlan& plan, const Device& host) {
  std::vector<HostNic> out;
  for (const Port& p : host.ports) {
    const Device* tor = plan.find(p.peer_device);
    HostNic nic;
    nic.port = &p;
    nic.address = *p.address;
    nic.subnet = tor->subnet->prefix;
    nic.gateway = tor->subnet->gateway;
    // One table per rail; a second NIC (or port) on the same rail gets the next free one.
    uint32_t rail = p.rail == kNoRail ? 0 : p.rail;
    uint32_t same = 0;
    for (const HostNic& earlier : out)
      if (earlier.port->rail == p.rail) ++same;
    nic.table = rail_table(rail) + same * 64;
    nic.rule_priority = rail_rule_priority(rail) + same * 64;
    out.push_back(nic);
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> host_sysctls() {
  return {{"net.ipv4.conf.all.arp_ignore", "1"},
          {"net.ipv4.conf.all.arp_announce", "2"},
          {"net.ipv4.conf.all.rp_filter", "0"},
          {"net.ipv4.conf.default.rp_filter", "0"},
          {"net.ipv4.conf.all.ignore_routes_with_linkdown", "1"}};
}

std::vector<std::string> host_nic_commands(const FabricPlan& plan, const HostNic& n) {
  const std::string dev = n.port->name, src = to_string(n.address.base), table = std::to_string(n.table);
  return {"link set dev " + dev + " mtu " + std::to_string(plan.options.mtu) + " up",
          "address replace " + to_string(n.address) + " dev " + dev,
          "route replace " + to_string(n.subnet) + " dev " + dev + " src " + src + " table " + table,
          "route replace default via " + to_string(n.gateway) + " dev " + dev + " src " + src + " table " + table,
          "route replace unreachable default metric 4294967295 table " + table,
          "rule add from " + src + " lookup " + table + " priority " + std::to_string(n.rule_priority)};
}

std::vector<std::string> switch_commands(const FabricPlan& plan, const Device& sw) {
  const std::string mtu = std::to_string(plan.options.mtu);
  std::vector<std::string> out{"link set dev lo up", "address add " + to_string(Prefix{sw.loopback, 32}) + " dev lo"};
  for (const Port* p : fabric_ports(sw)) {
    out.push_back("link set dev " + p->name + " mtu " + mtu);
    out.push_back("address add " + to_string(*p->address) + " dev " + p->name);
    out.push_back("link set dev " + p->name + " up");
  }
  if (sw.subnet) {
    const std::string& br = sw.subnet->bridge;
    // No STP (a ToR's host ports form no loop), no multicast snooping (its own reports).
    out.push_back("link add " + br + " mtu " + mtu + " type bridge stp_state 0 forward_delay 0 mcast_snooping 0");
    for (const Port* p : host_ports(sw)) out.push_back("link set dev " + p->name + " mtu " + mtu + " master " + br + " up");
    out.push_back("address add " + to_string(Prefix{sw.subnet->gateway, sw.subnet->prefix.length}) + " dev " + br);
    out.push_back("link set dev " + br + " up");
  }
  return out;
}

std::string host_script(const FabricPlan& plan, const Device& host) {
  const PlanOptions& opt = plan.options;
  std::ostringstream o;
  o << "#!/bin/sh\n" << header(plan, "#", host.name + ": back-end NICs, one routing table per rail, RoCE QoS. Run as root.");
  o << "set -e\n\n";
  for (const auto& [key, value] : host_sysctls()) o << "sysctl -qw " << key << '=' << value << '\n';
  for (const HostNic& n : host_nics(plan, host)) {
    o << "\n# " << n.port->name << " (rail " << rail_text(n.port->rail) << ") to " << n.port->peer_device << " port "
      << n.port->peer_port << "\n";
    for (const std::string& line : host_nic_commands(plan, n)) {
      if (line.starts_with("rule add")) o << "ip rule del priority " << n.rule_priority << " 2>/dev/null || true\n";
      o << "ip " << line << '\n';
    }
  }
  // RoCE needs a lossless class: trust DSCP, PFC on one priority, ECN marking and
  // notification (DCQCN) on it, and RDMA-CM traffic sent with that class.
  o << "\n# RoCE QoS (NVIDIA/Mellanox NICs: mlnx_qos, cma_roce_tos); skipped on a NIC without RDMA\n";
  std::string pfc;
  for (uint32_t p = 0; p < 8; ++p) pfc += std::string(p ? "," : "") + (p == opt.qos.pfc_priority ? "1" : "0");
  for (const HostNic& n : host_nics(plan, host)) {
    const std::string dev = n.port->name, ecn = "/sys/class/net/" + dev + "/ecn/";
    o << "if [ -d /sys/class/net/" << dev << "/device/infiniband ]; then\n";
    o << "  mlnx_qos -i " << dev << " --trust dscp --pfc " << pfc << '\n';
    o << "  echo 1 > " << ecn << "roce_np/enable/" << opt.qos.pfc_priority << '\n';
    o << "  echo 1 > " << ecn << "roce_rp/enable/" << opt.qos.pfc_priority << '\n';
    o << "  for ib in /sys/class/net/" << dev << "/device/infiniband/*; do cma_roce_tos -d \"${ib##*/}\" -t "
      << roce_traffic_class(opt.qos) << "; done\n";
    o << "fi\n";
  }
  return o.str();
}

std::string switch_interfaces(const FabricPlan& plan, const Device& sw) {
  const uint32_t mtu = plan.options.mtu;
  std::ostringstream o;
  o << header(plan, "#", sw.name + ": ports, MTU and addresses (ifupdown2)");
  o << "\nauto lo\niface lo inet loopback\n    address " << to_string(Prefix{sw.loopback, 32}) << '\n';
  for (const Port* p : fabric_ports(sw))
    o << "\nauto " << p->name << "\niface " << p->name << "\n    address " << to_string(*p->address) << "\n    mtu "
      << mtu << "\n    alias " << p->peer_device << ':' << p->peer_port << '\n';
  for (const Port* p : host_ports(sw))
    o << "\nauto " << p->name << "\niface " << p->name << "\n    mtu " << mtu << "\n    alias " << p->peer_device << ':'
      << p->peer_port << '\n';
  if (sw.subnet) {
    o << "\nauto " << sw.subnet->bridge << "\niface " << sw.subnet->bridge << "\n    bridge-ports";
    for (const Port* p : host_ports(sw)) o << ' ' << p->name;
    o << "\n    address " << to_string(Prefix{sw.subnet->gateway, sw.subnet->prefix.length}) << "\n    mtu " << mtu
      << '\n';
  }
  return o.str();
}

std::string frr_conf(const FabricPlan& plan, const Device& sw) {
  std::ostringstream o;
  o << header(plan, "!", sw.name + ": eBGP on every fabric link, ECMP over all of them, BFD on every session");
  o << "frr defaults datacenter\nhostname " << sw.name << "\nservice integrated-vtysh-config\n!\n";
  // Routes with their nexthops inline, not as kernel nexthop objects: with those, zebra
  // (8.4) and the kernel disagree once a link has gone down and up — the kernel drops the
  // nexthop from its group and zebra never puts it back, so ECMP stays one path short.
  o << "no zebra nexthop kernel enable\n!\n";
  o << "router bgp " << sw.asn << "\n bgp router-id " << to_string(sw.loopback) << '\n';
  o << " bgp bestpath as-path multipath-relax\n no bgp ebgp-requires-policy\n";
  for (const Port* p : fabric_ports(sw)) {
    const Device* peer = plan.find(p->peer_device);
    const std::string address = to_string(peer->find_port(p->peer_port)->address->base);
    o << " neighbor " << address << " remote-as " << peer->asn << '\n';
    o << " neighbor " << address << " description " << p->name << '\n';
    o << " neighbor " << address << " bfd profile fabric\n";
  }
  o << " !\n address-family ipv4 unicast\n";
  if (sw.subnet) o << "  network " << to_string(sw.subnet->prefix) << '\n';
  o << "  network " << to_string(Prefix{sw.loopback, 32}) << '\n';
  o << "  maximum-paths 64\n exit-address-family\nexit\n!\n";
  o << "bfd\n profile fabric\n  transmit-interval " << plan.options.bfd_interval_ms << "\n  receive-interval "
    << plan.options.bfd_interval_ms << "\n exit\nexit\n!\n";
  return o.str();
}

}  // namespace xm::ops
