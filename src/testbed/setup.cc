#include "testbed/setup.h"

namespace xm::testbed {
namespace {

std::string subnet_of(const Plan& plan, uint32_t rail) {
  return "10." + std::to_string(plan.subnet) + "." + std::to_string(rail) + ".0/24";
}

Sysctls common_sysctls() {
  return {{"net.ipv6.conf.all.disable_ipv6", "1"}, {"net.ipv6.conf.default.disable_ipv6", "1"}};
}

Sysctls ipv4_sysctls() {
  Sysctls s = common_sysctls();
  s.insert(s.end(), {{"net.ipv4.conf.all.rp_filter", "0"},
                     {"net.ipv4.conf.default.rp_filter", "0"},
                     {"net.ipv4.conf.all.arp_ignore", "1"},
                     {"net.ipv4.conf.all.arp_announce", "2"},
                     {"net.ipv4.conf.all.ignore_routes_with_linkdown", "1"},
                     {"net.ipv4.conf.default.ignore_routes_with_linkdown", "1"}});
  return s;
}

}  // namespace

// Hosts run a loss-based TCP congestion control, whatever the machine defaults to: it
// keeps a NIC's port buffer full, as a lossless fabric keeps its line busy. BBR (some
// machines' default, inherited by new namespaces) sizes its window to twice the measured
// bandwidth × minimum RTT — a few jumbo frames on these sub-millisecond links — so any
// scheduling delay on the 2 cores idles the link (measured: all-reduce 90–96 % of line
// rate with BBR, 98–99 % with Reno, same load). Reno because every namespace may use it.
Sysctls host_sysctls() {
  Sysctls s = ipv4_sysctls();
  s.push_back({"net.ipv4.tcp_congestion_control", "reno"});
  return s;
}

Sysctls fabric_sysctls() { return common_sysctls(); }

Sysctls spine_sysctls() {
  Sysctls s = ipv4_sysctls();
  s.insert(s.end(), {{"net.ipv4.ip_forward", "1"},
                     {"net.ipv4.conf.all.send_redirects", "0"},
                     {"net.ipv4.conf.default.send_redirects", "0"}});
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

std::vector<Batch> setup_batches(const Plan& plan) {
  std::vector<Batch> batches;
  std::string mtu = std::to_string(plan.mtu);

  // Hosts: one veth per NIC (its peer created straight in the fabric namespace), the
  // address, and the rail's own routing table selected by source address.
  for (const HostPlan& h : plan.hosts) {
    Batch b{"ip", h.netns, {"link set lo up"}};
    for (const NicPlan& n : h.nics) {
      std::string table = std::to_string(rail_table(n.rail));
      b.lines.push_back("link add " + n.ifname + " address " + n.mac + " mtu " + mtu + " type veth peer name " +
                        n.fabric_port + " netns " + plan.fabric_netns + " mtu " + mtu);
      b.lines.push_back("addr add " + n.address + "/24 dev " + n.ifname);
      b.lines.push_back("link set " + n.ifname + " up");
      b.lines.push_back("route add " + subnet_of(plan, n.rail) + " dev " + n.ifname + " src " + n.address +
                        " table " + table);
      const RailPlan* rail = plan.find_rail(n.rail);
      b.lines.push_back("route add default via " + rail->address + " dev " + n.ifname + " onlink table " + table);
      // When the NIC loses carrier the two routes above are skipped; this one then
      // answers "unreachable" instead of letting the main table pick another NIC.
      b.lines.push_back("route add unreachable default metric 4294967295 table " + table);
      b.lines.push_back("rule add from " + subnet_of(plan, n.rail) + " lookup " + table + " pref " +
                        std::to_string(1000 + n.rail));
      for (const HostPlan& peer : plan.hosts) {
        if (peer.index == h.index) continue;
        const NicPlan* p = plan.find_nic(peer.name + "/" + n.ifname);
        b.lines.push_back("neigh replace " + p->address + " lladdr " + p->mac + " dev " + n.ifname + " nud permanent");
      }
      b.lines.push_back("neigh replace " + rail->address + " lladdr " + rail->mac + " dev " + n.ifname +
                        " nud permanent");
    }
    batches.push_back(std::move(b));
  }

  // The ToRs: a bridge per rail with every host's NIC and the spine link as ports.
  // Without multicast snooping the bridge sends no IGMP reports of its own.
  Batch fab{"ip", plan.fabric_netns, {"link set lo up"}};
  Batch spine{"ip", plan.spine_netns, {"link set lo up"}};
  Batch fdb{"bridge", plan.fabric_netns, {}};
  for (const RailPlan& r : plan.rails) {
    fab.lines.push_back("link add " + r.bridge + " type bridge stp_state 0 forward_delay 0 mcast_snooping 0");
    fab.lines.push_back("link set " + r.bridge + " up");
    for (const HostPlan& h : plan.hosts) {
      const NicPlan* n = plan.find_nic(h.name + "/nic" + std::to_string(r.rail));
      fab.lines.push_back("link set " + n->fabric_port + " master " + r.bridge + " up");
      fdb.lines.push_back("fdb replace " + n->mac + " dev " + n->fabric_port + " master static");
    }
    fab.lines.push_back("link add " + r.uplink + " mtu " + mtu + " type veth peer name " + r.spine_ifname +
                        " address " + r.mac + " netns " + plan.spine_netns + " mtu " + mtu);
    fab.lines.push_back("link set " + r.uplink + " master " + r.bridge + " up");
    fdb.lines.push_back("fdb replace " + r.mac + " dev " + r.uplink + " master static");

    spine.lines.push_back("addr add " + r.address + "/24 dev " + r.spine_ifname);
    spine.lines.push_back("link set " + r.spine_ifname + " up");
    for (const HostPlan& h : plan.hosts) {
      const NicPlan* n = plan.find_nic(h.name + "/nic" + std::to_string(r.rail));
      spine.lines.push_back("neigh replace " + n->address + " lladdr " + n->mac + " dev " + r.spine_ifname +
                            " nud permanent");
    }
  }
  batches.push_back(std::move(fab));
  batches.push_back(std::move(spine));
  batches.push_back(std::move(fdb));

  // Line rate: tbf on the egress of both ends of every link.
  for (const HostPlan& h : plan.hosts) {
    Batch tc{"tc", h.netns, {}};
    for (const NicPlan& n : h.nics) tc.lines.push_back(tbf_line(n.ifname, n.rate_bps, plan.mtu));
    batches.push_back(std::move(tc));
  }
  Batch fab_tc{"tc", plan.fabric_netns, {}}, spine_tc{"tc", plan.spine_netns, {}};
  for (const HostPlan& h : plan.hosts)
    for (const NicPlan& n : h.nics) fab_tc.lines.push_back(tbf_line(n.fabric_port, n.rate_bps, plan.mtu));
  for (const RailPlan& r : plan.rails) {
    fab_tc.lines.push_back(tbf_line(r.uplink, r.rate_bps, plan.mtu));
    spine_tc.lines.push_back(tbf_line(r.spine_ifname, r.rate_bps, plan.mtu));
  }
  batches.push_back(std::move(fab_tc));
  batches.push_back(std::move(spine_tc));
  return batches;
}

}  // namespace xm::testbed
