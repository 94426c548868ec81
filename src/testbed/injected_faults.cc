#include "testbed/injected_faults.h"

#include <filesystem>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "ops/observation.h"
#include "ops/plan_dir.h"
#include "ops/render.h"
#include "testbed/daemons.h"
#include "testbed/setup.h"
#include "testbed/state.h"
#include "testbed/system.h"
#include "testbed/units.h"
#include "util/format.h"

namespace xm::testbed {
namespace {

using Cmd = std::vector<std::string>;
using Cmds = std::vector<Cmd>;
using nlohmann::json;

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

// Where a cable ends on a ToR: its namespace, port, bridge (host ports) and rate.
struct TorEnd {
  std::string netns, port, master;
  uint64_t rate_bps = 0;
};

void append(Cmds& to, Cmds more) { to.insert(to.end(), more.begin(), more.end()); }

// Moves (or renames) one veth end, keeping its cable's shaping.
Cmds move(const Plan& plan, const TorEnd& from, const std::string& to_netns, const std::string& to_port,
          const std::string& master, bool up) {
  Cmds c{{"ip", "-n", from.netns, "link", "set", "dev", from.port, "down"}};
  if (to_netns != from.netns) c.push_back({"ip", "-n", from.netns, "link", "set", "dev", from.port, "netns", to_netns});
  if (to_port != from.port) c.push_back({"ip", "-n", to_netns, "link", "set", "dev", from.port, "name", to_port});
  if (!master.empty()) c.push_back({"ip", "-n", to_netns, "link", "set", "dev", to_port, "master", master});
  c.push_back({"ip", "-n", to_netns, "link", "set", "dev", to_port, "mtu", std::to_string(plan.mtu)});
  Cmd tc{"tc", "-n", to_netns};
  for (std::string& w : words(tbf_line(to_port, from.rate_bps, plan.mtu))) tc.push_back(std::move(w));
  c.push_back(std::move(tc));
  if (up) c.push_back({"ip", "-n", to_netns, "link", "set", "dev", to_port, "up"});
  return c;
}

// Swaps the cables at two ToR ports (the same ToR or two).
Cmds swap(const Plan& plan, const TorEnd& a, const TorEnd& b) {
  Cmds c = move(plan, a, b.netns, "xmswap", "", false);
  append(c, move(plan, b, a.netns, a.port, a.master, true));
  append(c, move(plan, TorEnd{b.netns, "xmswap", "", a.rate_bps}, b.netns, b.port, b.master, true));
  return c;
}

// One end of a cable: where it is, and the other end.
struct CableEnd {
  std::string netns, dev, far_netns, far_dev;
  uint64_t rate_bps = 0;
};

// "1%", "0.5%" or "0.01": a fraction in (0, 1].
Result<double> parse_fraction(const std::string& text, double fallback) {
  if (text.empty()) return fallback;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end && *end == '%') v /= 100, ++end;
  if (end == text.c_str() || *end != '\0' || !(v > 0) || v > 1)
    return Error{"--value " + text + ": expected a fraction such as 1% or 0.01"};
  return v;
}

// An nftables table `table` on one device, in netdev family: `rules` per hook.
Cmd nft_table(const std::string& netns, const std::string& table, const std::string& dev,
              const std::vector<std::pair<std::string, std::string>>& rules) {
  std::string text = "table netdev " + table + " {\n";
  for (const auto& [hook, rule] : rules)
    text += "  chain " + hook + " { type filter hook " + hook + " device \"" + dev + "\" priority 0; " + rule + "; }\n";
  return {"ip", "netns", "exec", netns, "sh", "-c", "printf '%s' '" + text + "}\n' | nft -f -"};
}

class Injector {
 public:
  Injector(std::string name, Plan plan, ops::FabricPlan fabric)
      : name_(std::move(name)), plan_(std::move(plan)), fabric_(std::move(fabric)) {}

  // The commands that inject `f` and those that undo it.
  Result<std::pair<Cmds, Cmds>> commands(const InjectedFault& f, size_t serial) const {
    switch (f.kind) {
      case FaultKind::kSwap:
        return swap_both_ways(tor_end(f.at), tor_end(f.with));
      case FaultKind::kSwapNics:
        return swap_both_ways(nic_end(f.at), nic_end(f.with));
      case FaultKind::kUnplug: {
        Result<TorEnd> e = f.at.find('/') != std::string::npos ? nic_end(f.at) : tor_end(f.at);
        if (!e) return e.error();
        const std::string spare = plan_.netns_of("spare"), parked = "u" + std::to_string(serial);
        Cmds on{{"sh", "-c", "ip netns add " + spare + " 2>/dev/null || true"}};
        append(on, move(plan_, *e, spare, parked, "", false));
        return std::pair{on, move(plan_, TorEnd{spare, parked, "", e->rate_bps}, e->netns, e->port, e->master, true)};
      }
      case FaultKind::kExtra: {
        const SwitchPlan* a = plan_.find_switch(f.at);
        const SwitchPlan* b = plan_.find_switch(f.with);
        if (!a || !b || a == b) return Error{"--at and --with: two switches of the testbed, e.g. tor0 and tor1"};
        const std::string port = "extra" + std::to_string(serial);
        Cmds on{{"ip", "-n", a->netns, "link", "add", port, "mtu", std::to_string(plan_.mtu), "type", "veth", "peer",
                 "name", port, "netns", b->netns, "mtu", std::to_string(plan_.mtu)},
                {"ip", "-n", a->netns, "link", "set", "dev", port, "up"},
                {"ip", "-n", b->netns, "link", "set", "dev", port, "up"}};
        return std::pair{on, Cmds{{"ip", "-n", a->netns, "link", "del", port}}};
      }
      case FaultKind::kWrongSwitch: {
        Result<TorEnd> e = nic_end(f.at);
        if (!e) return e.error();
        const SwitchPlan* s = plan_.find_switch(f.with);
        if (!s || plan_.netns_of(s->name) == e->netns) return Error{"--with: another switch, e.g. tor0"};
        const std::string port = "spare" + std::to_string(serial);
        return std::pair{move(plan_, *e, s->netns, port, "", true),
                         move(plan_, TorEnd{s->netns, port, "", e->rate_bps}, e->netns, e->port, e->master, true)};
      }
      case FaultKind::kMtu: {
        const HostPlan* h = nullptr;
        const NicPlan* n = plan_.find_nic(f.at, &h);
        if (!n || f.value.empty()) return Error{"--at h<i>/<nic> and --value MTU"};
        auto set = [&](const std::string& mtu) { return Cmds{{"ip", "-n", h->netns, "link", "set", "dev", n->ifname, "mtu", mtu}}; };
        return std::pair{set(f.value), set(std::to_string(plan_.mtu))};
      }
      case FaultKind::kAddress: {
        const HostPlan* h = nullptr;
        const NicPlan* n = plan_.find_nic(f.at, &h);
        if (!n || !ops::parse_prefix(f.value)) return Error{"--at h<i>/<nic> and --value ADDRESS/LENGTH"};
        const std::string right = n->address + "/" + std::to_string(n->prefix);
        // The right one goes first: deleting a primary address takes the secondaries of
        // its subnet with it.
        Cmds on{{"ip", "-n", h->netns, "address", "del", right, "dev", n->ifname},
                {"ip", "-n", h->netns, "address", "add", f.value, "dev", n->ifname}};
        Cmds off{{"ip", "-n", h->netns, "address", "del", f.value, "dev", n->ifname}};
        // Removing the address took the rail table's routes with it: the plan's again.
        append(off, nic_routes(f.at));
        return std::pair{on, off};
      }
      case FaultKind::kBgpDown: {
        Result<std::pair<const ops::Device*, std::string>> s = session(f.at);
        if (!s) return s.error();
        return std::pair{vtysh(s->first, {"router bgp " + std::to_string(s->first->asn), "neighbor " + s->second + " shutdown"}),
                         vtysh(s->first, {"router bgp " + std::to_string(s->first->asn), "no neighbor " + s->second + " shutdown"})};
      }
      case FaultKind::kEcmp: {
        const ops::Device* tor = fabric_.find(f.at);
        if (!tor || tor->role != ops::Role::kTor) return Error{"--at: a ToR, e.g. tor1"};
        auto paths = [&](const char* n) {
          return vtysh(tor, {"router bgp " + std::to_string(tor->asn), "address-family ipv4 unicast", std::string("maximum-paths ") + n});
        };
        return std::pair{paths("1"), paths("64")};
      }
      case FaultKind::kLoss: {
        Result<CableEnd> e = cable_end(f.at);
        Result<double> p = parse_fraction(f.value, 0.01);
        if (!e) return e.error();
        if (!p) return p.error();
        const std::string table = "xmloss" + std::to_string(serial);
        const std::string rule = "numgen random mod 1000000 < " + std::to_string(std::llround(*p * 1e6)) + " drop";
        return std::pair{Cmds{nft_table(e->netns, table, e->dev, {{"ingress", rule}, {"egress", rule}})},
                         Cmds{{"ip", "netns", "exec", e->netns, "nft", "delete", "table", "netdev", table}}};
      }
      case FaultKind::kBlackhole: {
        Result<CableEnd> e = cable_end(f.at);
        Result<double> p = parse_fraction(f.value, 0.5);
        if (!e) return e.error();
        if (!p) return p.error();
        const std::string table = "xmhole" + std::to_string(serial);
        // The control plane (BGP 179, BFD 3784/3785/4784) passes: routing keeps the path.
        const std::string rule =
            "meta l4proto { tcp, udp } th sport != { 179, 3784, 3785, 4784 } th dport != { 179, 3784, 3785, 4784 } "
            "jhash ip saddr . ip daddr . meta l4proto . th sport . th dport mod 10000 seed 0x786d < " +
            std::to_string(std::llround(*p * 1e4)) + " drop";
        return std::pair{Cmds{nft_table(e->netns, table, e->dev, {{"egress", rule}})},
                         Cmds{{"ip", "netns", "exec", e->netns, "nft", "delete", "table", "netdev", table}}};
      }
      case FaultKind::kDegraded: {
        Result<CableEnd> e = cable_end(f.at);
        if (!e) return e.error();
        uint64_t rate = 0;
        if (f.value.empty() || f.value.back() == '%') {
          Result<double> p = parse_fraction(f.value, 0.1);
          if (!p) return p.error();
          rate = uint64_t(double(e->rate_bps) * *p);
        } else {
          Result<uint64_t> r = parse_rate(f.value);
          if (!r) return Error{"--value " + f.value + ": " + r.error().message};
          rate = *r;
        }
        auto shape = [&](uint64_t bps) {
          Cmds c;
          for (const auto& [ns, dev] : {std::pair{e->netns, e->dev}, std::pair{e->far_netns, e->far_dev}}) {
            Cmd tc{"tc", "-n", ns};
            for (std::string& w : words(tbf_line(dev, bps, plan_.mtu))) tc.push_back(std::move(w));
            c.push_back(std::move(tc));
          }
          return c;
        };
        return std::pair{shape(rate), shape(e->rate_bps)};
      }
      case FaultKind::kFlap: {
        Result<CableEnd> e = cable_end(f.at);
        if (!e) return e.error();
        // A NIC's cable flaps at its ToR port: the NIC loses carrier and keeps its routes
        // (taking the NIC itself down would flush them, which is not what a flap does).
        if (f.at.find('/') != std::string::npos) std::swap(e->netns, e->far_netns), std::swap(e->dev, e->far_dev);
        const double period = f.value.empty() ? 4.0 : std::atof(f.value.c_str());
        if (!(period >= 0.2) || period > 3600) return Error{"--value " + f.value + ": seconds per flap, 0.2-3600"};
        const std::string pid_file = runtime_dir(name_) + "/flap" + std::to_string(serial) + ".pid";
        const std::string half = trimmed(period / 2, 3);
        const std::string down = "ip -n " + e->netns + " link set dev " + e->dev + " down";
        const std::string up = "ip -n " + e->netns + " link set dev " + e->dev + " up";
        // Detached, its pid recorded under the runtime directory (which its command line
        // names), so that `testbed down` stops it too.
        const std::string loop = "while :; do : " + runtime_dir(name_) + "; " + down + "; sleep " + half + "; " + up +
                                 "; sleep " + half + "; done";
        return std::pair{Cmds{{"sh", "-c", "setsid sh -c '" + loop + "' </dev/null >/dev/null 2>&1 & echo $! > " + pid_file}},
                         Cmds{{"sh", "-c", "kill $(cat " + pid_file + ") 2>/dev/null; rm -f " + pid_file},
                              {"ip", "-n", e->netns, "link", "set", "dev", e->dev, "up"}}};
      }
      case FaultKind::kLinkDown:
      case FaultKind::kNicDown: {
        Result<CableEnd> e = cable_end(f.at);
        if (!e) return e.error();
        if (f.kind == FaultKind::kNicDown && f.at.find('/') == std::string::npos)
          return Error{"--at " + f.at + ": a host's NIC, e.g. h3/nic1"};
        // A NIC's link down is its ToR port going down; a NIC down is the host's end.
        if (f.kind == FaultKind::kLinkDown && f.at.find('/') != std::string::npos) std::swap(e->netns, e->far_netns), std::swap(e->dev, e->far_dev);
        auto set = [&](const char* state) { return Cmds{{"ip", "-n", e->netns, "link", "set", "dev", e->dev, state}}; };
        Cmds up = set("up");
        // A NIC taken down loses its routes with it: its rail table's, as deployed, again.
        if (f.kind == FaultKind::kNicDown) append(up, nic_routes(f.at));
        return std::pair{set("down"), up};
      }
      case FaultKind::kSwitchDown: {
        const SwitchPlan* sw = plan_.find_switch(f.at);
        if (!sw) return Error{"--at " + f.at + ": a switch of the testbed, e.g. tor1 or spine0"};
        // In one batch, so the switch goes down at once rather than port by port.
        std::string down, up;
        for (const std::string& port : switch_ports(sw->name)) {
          down += "link set dev " + port + " down\n";
          up += "link set dev " + port + " up\n";
        }
        auto batch = [&](const std::string& lines) {
          return Cmds{{"sh", "-c", "printf '" + lines + "' | ip -n " + sw->netns + " -batch -"}};
        };
        return std::pair{batch(down), batch(up)};
      }
    }
    return Error{"unknown fault"};
  }

 private:
  // A swap, and its undo: swapping back, the cables' rates travelling with them.
  Result<std::pair<Cmds, Cmds>> swap_both_ways(const Result<TorEnd>& a, const Result<TorEnd>& b) const {
    if (!a) return a.error();
    if (!b) return b.error();
    TorEnd a2 = *a, b2 = *b;
    a2.rate_bps = b->rate_bps, b2.rate_bps = a->rate_bps;
    return std::pair{swap(plan_, *a, *b), swap(plan_, a2, b2)};
  }

  Result<TorEnd> tor_end(const std::string& text) const {
    size_t colon = text.find(':');
    const SwitchPlan* s = colon == std::string::npos ? nullptr : plan_.find_switch(text.substr(0, colon));
    const std::string port = colon == std::string::npos ? "" : text.substr(colon + 1);
    if (s && s->role == "tor") {
      for (const HostPlan& h : plan_.hosts)
        for (const NicPlan& n : h.nics)
          if (n.tor == s->name && n.fabric_port == port) return TorEnd{s->netns, port, plan_.find_rail(n.rail)->bridge, n.rate_bps};
      for (const UplinkPlan& u : plan_.uplinks)
        if (u.tor == s->name && u.tor_port == port) return TorEnd{s->netns, port, "", u.rate_bps};
    }
    return Error{"\"" + text + "\": expected a ToR port, e.g. tor1:h0-nic1 or tor1:spine0"};
  }

  Result<TorEnd> nic_end(const std::string& text) const {
    const NicPlan* n = plan_.find_nic(text);
    if (!n) return Error{"\"" + text + "\": expected a NIC, e.g. h0/nic1"};
    return TorEnd{plan_.netns_of(n->tor), n->fabric_port, plan_.find_rail(n->rail)->bridge, n->rate_bps};
  }

  Result<CableEnd> cable_end(const std::string& text) const {
    if (text.find('/') != std::string::npos) {
      const HostPlan* h = nullptr;
      const NicPlan* n = plan_.find_nic(text, &h);
      if (n) return CableEnd{h->netns, n->ifname, plan_.netns_of(n->tor), n->fabric_port, n->rate_bps};
    } else if (size_t colon = text.find(':'); colon != std::string::npos) {
      const std::string sw = text.substr(0, colon), port = text.substr(colon + 1);
      for (const HostPlan& h : plan_.hosts)
        for (const NicPlan& n : h.nics)
          if (n.tor == sw && n.fabric_port == port) return CableEnd{plan_.netns_of(sw), port, h.netns, n.ifname, n.rate_bps};
      for (const UplinkPlan& u : plan_.uplinks) {
        if (u.tor == sw && u.tor_port == port)
          return CableEnd{plan_.netns_of(sw), port, plan_.netns_of(u.spine), u.spine_port, u.rate_bps};
        if (u.spine == sw && u.spine_port == port)
          return CableEnd{plan_.netns_of(sw), port, plan_.netns_of(u.tor), u.tor_port, u.rate_bps};
      }
    }
    return Error{"\"" + text + "\": expected a cable end: h0/nic1, tor1:h0-nic1, tor1:spine0 or spine0:tor1"};
  }

  // The commands that give a host NIC ("h3/nic1") its address and rail table's routes
  // as deployed (not its rules, which outlive addresses and links).
  Cmds nic_routes(const std::string& at) const {
    const HostPlan* h = nullptr;
    const NicPlan* n = plan_.find_nic(at, &h);
    Cmds out;
    const ops::Device* host = n ? fabric_.find(h->name) : nullptr;
    if (!host) return out;
    for (const ops::HostNic& nic : ops::host_nics(fabric_, *host)) {
      if (nic.port->name != n->ifname) continue;
      for (const std::string& line : ops::host_nic_commands(fabric_, nic)) {
        if (line.starts_with("rule ")) continue;
        Cmd c{"ip", "-n", h->netns};  // (replace: what survived stays as it is)
        for (std::string& w : words(line)) c.push_back(std::move(w));
        out.push_back(std::move(c));
      }
    }
    return out;
  }

  // A switch's cabled ports, by the plan.
  std::vector<std::string> switch_ports(const std::string& sw) const {
    std::vector<std::string> out;
    for (const HostPlan& h : plan_.hosts)
      for (const NicPlan& n : h.nics)
        if (n.tor == sw) out.push_back(n.fabric_port);
    for (const UplinkPlan& u : plan_.uplinks) {
      if (u.tor == sw) out.push_back(u.tor_port);
      if (u.spine == sw) out.push_back(u.spine_port);
    }
    return out;
  }

  Result<std::pair<const ops::Device*, std::string>> session(const std::string& text) const {
    size_t colon = text.find(':');
    const ops::Device* d = colon == std::string::npos ? nullptr : fabric_.find(text.substr(0, colon));
    const ops::Port* p = d ? d->find_port(text.substr(colon + 1)) : nullptr;
    if (!p || !p->address) return Error{"\"" + text + "\": expected a switch's fabric port, e.g. tor1:spine0"};
    const ops::Port* far = fabric_.find(p->peer_device)->find_port(p->peer_port);
    return std::pair{d, ops::to_string(far->address->base)};
  }

  Cmds vtysh(const ops::Device* d, const std::vector<std::string>& lines) const {
    Cmd c{"vtysh", "--vty_socket", daemon_dir(name_, d->name), "-c", "configure terminal"};
    for (const std::string& l : lines) c.insert(c.end(), {"-c", l});
    return {c};
  }

  std::string name_;
  Plan plan_;
  ops::FabricPlan fabric_;
};

std::string faults_path(const std::string& name) { return runtime_dir(name) + "/faults.json"; }

json load_faults(const std::string& name) {
  std::ifstream in(faults_path(name));
  json j = in ? json::parse(in, nullptr, false) : json::array();
  return j.is_array() ? j : json::array();
}

Status save_faults(const std::string& name, const json& faults) {
  std::ofstream out(faults_path(name));
  out << faults.dump(1) << "\n";
  return out ? Status::Ok() : Status(Error{"cannot write " + faults_path(name)});
}

// What a device's LLDP agent has heard, beside its ports' carrier.
struct LldpView {
  std::map<std::string, ops::Interface> interfaces;
  std::map<std::string, ops::Neighbour> heard;  // by local port
};

std::optional<LldpView> lldp_view(const Plan& plan, const std::string& device) {
  Result<std::string> links = run_command({"ip", "-n", plan.netns_of(device), "-j", "address", "show"});
  Result<std::string> lldp =
      run_command({"lldpcli", "-u", daemon_dir(plan.name, device) + "/lldpd.socket", "-f", "json", "show", "neighbors"});
  if (!links || !lldp) return std::nullopt;
  Result<std::map<std::string, ops::Interface>> interfaces = ops::parse_ip_addresses(*links, device);
  Result<std::map<std::string, ops::Neighbour>> heard = ops::parse_lldp_neighbours(*lldp, device);
  if (!interfaces || !heard) return std::nullopt;
  return LldpView{std::move(interfaces).value(), std::move(heard).value()};
}

// Until a restarted agent and its neighbours have heard each other, what they show is a
// blank or the old port names, not the cabling. Each side is asked to announce itself
// at once rather than at its next interval (a second), and again while the other has
// not heard it, until every planned port with carrier is known at both of its ends.
Status await_neighbours(const Plan& plan, const ops::FabricPlan& fabric, const std::vector<std::string>& restarted) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  for (;;) {
    std::set<std::string> to_announce;
    std::map<std::string, std::optional<LldpView>> views;
    auto view = [&](const std::string& device) -> const std::optional<LldpView>& {
      auto it = views.find(device);
      return it != views.end() ? it->second : views.emplace(device, lldp_view(plan, device)).first->second;
    };
    for (const std::string& name : restarted) {
      const ops::Device* d = fabric.find(name);
      if (!d) continue;
      const std::optional<LldpView>& v = view(name);
      if (!v) {
        to_announce.insert(name);
        continue;
      }
      for (const ops::Port& p : d->ports) {
        auto carrier = v->interfaces.find(p.name);
        if (carrier == v->interfaces.end() || !carrier->second.carrier) continue;
        auto heard = v->heard.find(p.name);
        if (heard == v->heard.end()) {  // the planned neighbour, as a guess at who is there
          if (!p.peer_device.empty()) to_announce.insert(p.peer_device);
          continue;
        }
        const std::optional<LldpView>& far = view(heard->second.sysname);
        bool answered = false;
        if (far)
          if (auto back = far->heard.find(heard->second.port); back != far->heard.end())
            answered = back->second.sysname == name && back->second.port == p.name;
        if (!answered) to_announce.insert(name);
      }
    }
    if (to_announce.empty() || std::chrono::steady_clock::now() > deadline) return Status::Ok();
    // Best effort: a restarted agent may not listen yet, a neighbour's may be down.
    for (const std::string& device : to_announce)
      (void)run_command({"lldpcli", "-u", daemon_dir(plan.name, device) + "/lldpd.socket", "update"});
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// Runs the commands, then restarts lldpd on every device a cable end moved into, out of
// or was renamed on (see restart_lldpd): otherwise it goes on announcing the old port
// names for seconds, and the re-cable shows late (a same-ToR swap: 4.2 s).
Status run_all(const Plan& plan, const Cmds& cmds) {
  std::set<std::string> moved;
  for (const Cmd& c : cmds) {
    if (Result<std::string> r = run_command(c); !r) return Error{r.error().message};
    if (c.size() == 9 && c[0] == "ip" && c[7] == "netns") moved.insert(c[2]), moved.insert(c[8]);
    if (c.size() == 9 && c[0] == "ip" && c[7] == "name") moved.insert(c[2]);  // renamed: lldpd keeps the old name
  }
  std::vector<std::string> restarted;
  for (const std::string& ns : moved) {
    const std::string device = ns.substr(netns_prefix(plan.name).size());
    if (!plan.find_switch(device)) continue;
    if (Status s = restart_lldpd(plan, device); !s) return s;
    restarted.push_back(device);
  }
  if (restarted.empty()) return Status::Ok();
  Result<ops::FabricPlan> fabric = ops::load_plan_dir(plan_dir(plan.name));
  if (!fabric) return Error{fabric.error().message};
  return await_neighbours(plan, *fabric, restarted);
}

}  // namespace

const char* to_string(FaultKind kind) {
  static const char* const kNames[] = {"swap",     "swap-nics", "unplug",    "extra", "wrong-switch",
                                       "mtu",      "address",   "bgp-down",  "ecmp",  "loss",
                                       "blackhole", "degraded", "flap",      "link-down", "nic-down",
                                       "switch-down"};
  return kNames[size_t(kind)];
}

bool is_miswire(FaultKind kind) { return kind <= FaultKind::kEcmp; }

Result<FaultKind> parse_fault_kind(const std::string& text) {
  for (size_t k = 0; k <= size_t(FaultKind::kSwitchDown); ++k)
    if (text == to_string(FaultKind(k))) return FaultKind(k);
  return Error{"fault " + text +
               ": expected swap, swap-nics, unplug, extra, wrong-switch, mtu, address, bgp-down, ecmp, loss, blackhole, "
               "degraded, flap, link-down, nic-down or switch-down"};
}

Result<std::string> inject(const std::string& name, const InjectedFault& fault) {
  if (!is_root()) return root_required();
  Result<StateLock> lock = StateLock::acquire();
  if (!lock) return Error{lock.error().message};
  Result<Plan> plan = load_state(name);
  if (!plan) return Error{plan.error().message};
  Result<ops::FabricPlan> fabric = ops::load_plan_dir(plan_dir(name));
  if (!fabric) return Error{fabric.error().message};
  json faults = load_faults(name);
  Injector injector(name, *plan, std::move(fabric).value());
  Result<std::pair<Cmds, Cmds>> c = injector.commands(fault, faults.size());
  if (!c) return Error{c.error().message};
  std::string what = std::string(to_string(fault.kind)) + " " + fault.at + (fault.with.empty() ? "" : " " + fault.with) +
                     (fault.value.empty() ? "" : " " + fault.value);
  if (Status s = run_all(*plan, c->first); !s) {
    Status undone = run_all(*plan, c->second);  // best effort: what went in comes out
    return Error{what + ": " + s.message() + (undone ? "" : "; undoing it also failed: " + undone.message())};
  }
  faults.push_back({{"what", what}, {"undo", c->second}});
  if (Status s = save_faults(name, faults); !s) return Error{s.message()};
  return "injected " + what;
}

Result<size_t> undo_all(const std::string& name) {
  if (!is_root()) return root_required();
  Result<StateLock> lock = StateLock::acquire();
  if (!lock) return Error{lock.error().message};
  Result<Plan> plan = load_state(name);
  if (!plan) return Error{plan.error().message};
  json faults = load_faults(name);
  size_t undone = 0;
  // Newest first, each struck from the record once undone, so a failure midway leaves
  // the record true and `--undo` can be run again.
  while (!faults.empty()) {
    const json& last = faults.back();
    if (Status s = run_all(*plan, last.at("undo").get<Cmds>()); !s)
      return Error{"undoing " + last.at("what").get<std::string>() + ": " + s.message()};
    faults.erase(faults.size() - 1);
    if (Status s = save_faults(name, faults); !s) return Error{s.message()};
    ++undone;
  }
  std::error_code ec;
  std::filesystem::remove(faults_path(name), ec);
  if (undone) {
    const std::string spare = netns_prefix(name) + "spare";  // where unplugged cables were parked
    for (const std::string& ns : list_netns())
      if (ns == spare)
        if (Status s = run_batch(Batch{"ip", "", {"netns del " + spare}}); !s) return Error{s.message()};
    if (Status s = wait_for_routes(*plan, std::chrono::seconds(60)); !s) return Error{s.message()};
  }
  return undone;
}

}  // namespace xm::testbed
