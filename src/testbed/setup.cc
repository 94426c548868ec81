#include "testbed/setup.h"

#include <cstdio>

#include "ops/render.h"

namespace xm::testbed {
namespace {

std::string gateway_mac(uint32_t rail) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "02:78:6d:%02x:fe:00", rail);
  return buf;
}

Sysctls no_ipv6() { return {{"net.ipv6.conf.all.disable_ipv6", "1"}, {"net.ipv6.conf.default.disable_ipv6", "1"}}; }

}  // namespace

// Hosts run a loss-based TCP congestion control, whatever the machine defaults to: it
// keeps a NIC's port buffer full, as a lossless fabric keeps its line busy. BBR (some
// machines' default, inherited by new namespaces) sizes its window to twice the measured
// bandwidth × minimum RTT — a few jumbo frames on these sub-millisecond links — so any
// scheduling delay on the 2 cores idles the link (measured: all-reduce 90–96 % of line
// rate with BBR, 98–99 % with Reno, same load). Reno because every namespace may use it.
Sysctls host_sysctls() {
  Sysctls s = no_ipv6();
  for (const auto& kv : ops::host_sysctls()) s.push_back(kv);
  s.push_back({"net.ipv4.conf.default.ignore_routes_with_linkdown", "1"});
  s.push_back({"net.ipv4.tcp_congestion_control", "reno"});
  return s;
}

Sysctls switch_sysctls() {
  Sysctls s = no_ipv6();
  s.insert(s.end(), {{"net.ipv4.ip_forward", "1"},
                     {"net.ipv4.conf.all.send_redirects", "0"},
                     {"net.ipv4.conf.default.send_redirects", "0"},
                     {"net.ipv4.conf.all.rp_filter", "0"},
                     {"net.ipv4.conf.default.rp_filter", "0"},
                     {"net.ipv4.conf.all.ignore_routes_with_linkdown", "1"},
                     {"net.ipv4.conf.default.ignore_routes_with_linkdown", "1"},
                     {"net.ipv4.fib_multipath_hash_policy", "1"}});
  return s;
}

Batch create_namespaces(const Plan& plan) {
  Batch b{"ip", "", {}};
  for (const std::string& ns : plan.namespaces()) b.lines.push_back("netns add " + ns);
  return b;
}

std::string tbf_line(const std::string& dev, uint64_t rate_bps, uint32_t mtu) {
  Tbf t = tbf_for(rate_bps, mtu);
  return "qdisc replace dev " + dev + " root tbf rate " + std::to_string(rate_bps) + "bit burst " +
         std::to_string(t.burst_bytes) + " limit " + std::to_string(t.limit_bytes);
}

std::vector<Batch> setup_batches(const Plan& plan, const ops::FabricPlan& fabric) {
  std::vector<Batch> batches;
  const std::string mtu = std::to_string(plan.mtu);

  // The cables: each host NIC a veth whose peer is created straight in its ToR's
  // namespace, each uplink a veth from the ToR into the spine's.
  for (const HostPlan& h : plan.hosts) {
    Batch b{"ip", h.netns, {"link set lo up"}};
    for (const NicPlan& n : h.nics)
      b.lines.push_back("link add " + n.ifname + " address " + n.mac + " mtu " + mtu + " type veth peer name " +
                        n.fabric_port + " netns " + plan.netns_of(n.tor) + " mtu " + mtu);
    batches.push_back(std::move(b));
  }
  for (const RailPlan& r : plan.rails) {
    Batch b{"ip", plan.netns_of(r.tor), {}};
    for (const UplinkPlan& u : plan.uplinks)
      if (u.tor == r.tor)
        b.lines.push_back("link add " + u.tor_port + " mtu " + mtu + " type veth peer name " + u.spine_port +
                          " netns " + plan.netns_of(u.spine) + " mtu " + mtu);
    batches.push_back(std::move(b));
  }

  // What the fabric plan configures: on hosts their NICs and rail tables, on switches
  // loopbacks, port addresses and the ToRs' host bridges.
  for (const ops::Device& d : fabric.devices) {
    Batch b{"ip", plan.netns_of(d.name), {}};
    if (d.role == ops::Role::kHost) {
      for (const ops::HostNic& n : ops::host_nics(fabric, d))
        for (std::string& line : ops::host_nic_commands(fabric, n)) b.lines.push_back(std::move(line));
    } else {
      b.lines = ops::switch_commands(fabric, d);
    }
    batches.push_back(std::move(b));
  }

  // Neighbours pinned, as the switches' own tables would be learned and kept: each host
  // knows its rail peers' and its gateway's MACs (the bridge's is set, not inherited from
  // a port). With ARP left to itself a 16 × 8 testbed's all-pairs check stalled: after a
  // few thousand handshakes entries went DELAY/PROBE and SYNs were lost for seconds.
  for (const RailPlan& r : plan.rails)
    batches.push_back(Batch{"ip", plan.netns_of(r.tor), {"link set dev " + r.bridge + " address " + gateway_mac(r.rail)}});
  for (const HostPlan& h : plan.hosts) {
    Batch b{"ip", h.netns, {}};
    for (const NicPlan& n : h.nics) {
      const RailPlan* r = plan.find_rail(n.rail);
      b.lines.push_back("neigh replace " + r->address + " lladdr " + gateway_mac(n.rail) + " dev " + n.ifname +
                        " nud permanent");
      for (const HostPlan& peer : plan.hosts) {
        if (peer.index == h.index) continue;
        for (const NicPlan& p : peer.nics)
          if (p.rail == n.rail)
            b.lines.push_back("neigh replace " + p.address + " lladdr " + p.mac + " dev " + n.ifname + " nud permanent");
      }
    }
    batches.push_back(std::move(b));
  }

  // Line rate: tbf on the egress of both ends of every cable.
  for (const HostPlan& h : plan.hosts) {
    Batch tc{"tc", h.netns, {}};
    for (const NicPlan& n : h.nics) tc.lines.push_back(tbf_line(n.ifname, n.rate_bps, plan.mtu));
    batches.push_back(std::move(tc));
  }
  for (const SwitchPlan& s : plan.switches) {
    Batch tc{"tc", s.netns, {}};
    for (const HostPlan& h : plan.hosts)
      for (const NicPlan& n : h.nics)
        if (n.tor == s.name) tc.lines.push_back(tbf_line(n.fabric_port, n.rate_bps, plan.mtu));
    for (const UplinkPlan& u : plan.uplinks) {
      if (u.tor == s.name) tc.lines.push_back(tbf_line(u.tor_port, u.rate_bps, plan.mtu));
      if (u.spine == s.name) tc.lines.push_back(tbf_line(u.spine_port, u.rate_bps, plan.mtu));
    }
    batches.push_back(std::move(tc));
  }
  return batches;
}

}  // namespace xm::testbed
