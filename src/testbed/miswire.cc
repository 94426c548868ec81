#include "testbed/miswire.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "ops/plan_dir.h"
#include "ops/render.h"
#include "testbed/daemons.h"
#include "testbed/setup.h"
#include "testbed/state.h"
#include "testbed/system.h"

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

class Injector {
 public:
  Injector(std::string name, Plan plan, ops::FabricPlan fabric)
      : name_(std::move(name)), plan_(std::move(plan)), fabric_(std::move(fabric)) {}

  // The commands that inject `f` and those that undo it.
  Result<std::pair<Cmds, Cmds>> commands(const MiswireFault& f, size_t serial) const {
    switch (f.kind) {
      case Miswire::kSwap:
        return swap_both_ways(tor_end(f.at), tor_end(f.with));
      case Miswire::kSwapNics:
        return swap_both_ways(nic_end(f.at), nic_end(f.with));
      case Miswire::kUnplug: {
        Result<TorEnd> e = f.at.find('/') != std::string::npos ? nic_end(f.at) : tor_end(f.at);
        if (!e) return e.error();
        const std::string spare = plan_.netns_of("spare"), parked = "u" + std::to_string(serial);
        Cmds on{{"sh", "-c", "ip netns add " + spare + " 2>/dev/null || true"}};
        append(on, move(plan_, *e, spare, parked, "", false));
        return std::pair{on, move(plan_, TorEnd{spare, parked, "", e->rate_bps}, e->netns, e->port, e->master, true)};
      }
      case Miswire::kExtra: {
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
      case Miswire::kWrongSwitch: {
        Result<TorEnd> e = nic_end(f.at);
        if (!e) return e.error();
        const SwitchPlan* s = plan_.find_switch(f.with);
        if (!s || plan_.netns_of(s->name) == e->netns) return Error{"--with: another switch, e.g. tor0"};
        const std::string port = "spare" + std::to_string(serial);
        return std::pair{move(plan_, *e, s->netns, port, "", true),
                         move(plan_, TorEnd{s->netns, port, "", e->rate_bps}, e->netns, e->port, e->master, true)};
      }
      case Miswire::kMtu: {
        const HostPlan* h = nullptr;
        const NicPlan* n = plan_.find_nic(f.at, &h);
        if (!n || f.value.empty()) return Error{"--at h<i>/<nic> and --value MTU"};
        auto set = [&](const std::string& mtu) { return Cmds{{"ip", "-n", h->netns, "link", "set", "dev", n->ifname, "mtu", mtu}}; };
        return std::pair{set(f.value), set(std::to_string(plan_.mtu))};
      }
      case Miswire::kAddress: {
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
        const ops::Device* host = fabric_.find(h->name);
        for (const ops::HostNic& nic : ops::host_nics(fabric_, *host)) {
          if (nic.port->name != n->ifname) continue;
          for (const std::string& line : ops::host_nic_commands(fabric_, nic)) {
            if (line.starts_with("rule ")) continue;  // rules outlive addresses
            Cmd c{"ip", "-n", h->netns};
            for (std::string& w : words(line)) c.push_back(std::move(w));
            off.push_back(std::move(c));
          }
        }
        return std::pair{on, off};
      }
      case Miswire::kBgpDown: {
        Result<std::pair<const ops::Device*, std::string>> s = session(f.at);
        if (!s) return s.error();
        return std::pair{vtysh(s->first, {"router bgp " + std::to_string(s->first->asn), "neighbor " + s->second + " shutdown"}),
                         vtysh(s->first, {"router bgp " + std::to_string(s->first->asn), "no neighbor " + s->second + " shutdown"})};
      }
      case Miswire::kEcmp: {
        const ops::Device* tor = fabric_.find(f.at);
        if (!tor || tor->role != ops::Role::kTor) return Error{"--at: a ToR, e.g. tor1"};
        auto paths = [&](const char* n) {
          return vtysh(tor, {"router bgp " + std::to_string(tor->asn), "address-family ipv4 unicast", std::string("maximum-paths ") + n});
        };
        return std::pair{paths("1"), paths("64")};
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
  // Until the restarted agents have heard their neighbours again (every agent sends each
  // second), what they show is a blank, not the cabling; then they announce themselves at
  // once rather than at their first interval, which comes seconds after a start.
  std::this_thread::sleep_for(std::chrono::milliseconds(1200));
  for (const std::string& device : restarted)
    if (Result<std::string> r = run_command({"lldpcli", "-u", daemon_dir(plan.name, device) + "/lldpd.socket", "update"}); !r)
      return Error{device + ": " + r.error().message};
  return Status::Ok();
}

}  // namespace

const char* to_string(Miswire kind) {
  static const char* const kNames[] = {"swap", "swap-nics", "unplug", "extra", "wrong-switch",
                                       "mtu",  "address",   "bgp-down", "ecmp"};
  return kNames[size_t(kind)];
}

Result<Miswire> parse_miswire(const std::string& text) {
  for (size_t k = 0; k <= size_t(Miswire::kEcmp); ++k)
    if (text == to_string(Miswire(k))) return Miswire(k);
  return Error{"--miswire " + text +
               ": expected swap, swap-nics, unplug, extra, wrong-switch, mtu, address, bgp-down or ecmp"};
}

Result<std::string> inject(const std::string& name, const MiswireFault& fault) {
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
