#include "ops/validate.h"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

namespace xm::ops {
namespace {

std::string end_name(const std::string& device, const std::string& port) { return device + ":" + port; }

std::string rail_words(uint32_t rail) { return rail == kNoRail ? "no rail" : "rail " + std::to_string(rail); }

class Validator {
 public:
  Validator(const FabricPlan& plan, const Observation& seen) : plan_(plan), seen_(seen) {
    for (const Device& d : plan.devices)
      for (const Port& p : d.ports) owner_of_[{p.peer_device, p.peer_port}] = {d.name, p.name};
  }

  Report run() {
    Report r;
    for (const Device& d : plan_.devices)
      for (const Port& p : d.ports) r.ports.push_back(check_port(d, p));
    for (const Device& d : plan_.devices) {
      for (PortReport& extra : unplanned_ports(d)) r.ports.push_back(std::move(extra));
      for (const std::string& problem : device_problems(d)) r.ports.push_back(PortReport{d.name, "", "", "", {problem}});
    }
    return r;
  }

 private:
  const DeviceView* view(const std::string& device) const {
    auto it = seen_.find(device);
    return it == seen_.end() ? nullptr : &it->second;
  }

  PortReport check_port(const Device& d, const Port& p) {
    PortReport r{d.name, p.name, end_name(p.peer_device, p.peer_port), "", {}};
    const DeviceView* v = view(d.name);
    if (!v) {
      r.problems.push_back(d.name + " did not answer");
      return r;
    }
    auto lldp = v->lldp.find(p.name);
    if (lldp != v->lldp.end()) r.actual = end_name(lldp->second.sysname, lldp->second.port);
    auto it = v->interfaces.find(p.name);
    const std::string here = d.name + "/" + p.name;
    if (it == v->interfaces.end()) {
      r.problems.push_back(here + " has no link: cable missing (expected " + p.peer_device + " port " + p.peer_port + ")");
      return r;
    }
    const Interface& i = it->second;
    if (!i.admin_up) {
      r.problems.push_back(here + " is shut down");
    } else if (!i.carrier) {
      r.problems.push_back(here + " has no carrier: cable missing or cut (expected " + p.peer_device + " port " +
                           p.peer_port + ")");
    } else if (!v->lldp_error.empty()) {
      // Said once for the device (device_problems); the neighbour is unknown, not absent.
    } else if (lldp == v->lldp.end()) {
      r.problems.push_back(here + " has carrier but no LLDP neighbour (expected " + p.peer_device + " port " +
                           p.peer_port + ")");
    } else if (r.actual != r.expected) {
      r.problems.push_back(miswire(d, p, lldp->second));
    }
    if (i.mtu != plan_.options.mtu)
      r.problems.push_back(here + " MTU " + std::to_string(i.mtu) + ", the plan " + std::to_string(plan_.options.mtu));
    if (p.address) {
      bool has = std::find(i.addresses.begin(), i.addresses.end(), *p.address) != i.addresses.end();
      std::string found;
      for (const Prefix& a : i.addresses)
        if (a != *p.address) found += (found.empty() ? "" : ", ") + to_string(a);
      if (!has) r.problems.push_back(here + " lacks address " + to_string(*p.address) + (found.empty() ? "" : "; has " + found));
      else if (!found.empty()) r.problems.push_back(here + " has addresses the plan does not: " + found);
    }
    if (d.role != Role::kHost && p.address) check_session(d, p, *v, r);
    if (d.role == Role::kTor && !p.address && d.subnet && i.master != d.subnet->bridge)
      r.problems.push_back(here + " is not a port of bridge " + d.subnet->bridge);
    return r;
  }

  // LLDP names a neighbour other than the plan's: say where the cable really goes, and
  // which cable it was probably swapped with.
  std::string miswire(const Device& d, const Port& p, const Neighbour& n) const {
    std::string words = d.name + "/" + p.name + " is cabled to " + n.sysname + " port " + n.port + ", expected " +
                        p.peer_device + " port " + p.peer_port;
    const Device* far = plan_.find(n.sysname);
    if (d.role == Role::kHost && far && far->role == Role::kTor) {
      if (far->rail != p.rail)
        words += ": " + rail_words(p.rail) + " NIC on " + rail_words(far->rail) + "'s ToR";
      else if (far->name != p.peer_device)
        words += ": the right rail, the wrong ToR";
    } else if (d.role == Role::kTor && p.rail != kNoRail) {
      const Device* host = plan_.find(n.sysname);
      const Port* nic = host ? host->find_port(n.port) : nullptr;
      if (nic && nic->rail != p.rail) words += ": a " + rail_words(nic->rail) + " NIC on " + rail_words(p.rail) + "'s ToR";
    }
    if (!far || !far->find_port(n.port)) return words + " (a port the plan does not have: wrong switch or spare port?)";
    auto owner = owner_of_.find({n.sysname, n.port});
    if (owner != owner_of_.end() && owner->second != Endpoint{d.name, p.name})
      words += " — swap with " + owner->second.device + "/" + owner->second.port + "?";
    return words;
  }

  void check_session(const Device& d, const Port& p, const DeviceView& v, PortReport& r) const {
    const Device* peer = plan_.find(p.peer_device);
    const Port* far = peer ? peer->find_port(p.peer_port) : nullptr;
    if (!far || !far->address) return;
    const std::string address = to_string(far->address->base);
    auto s = v.bgp.find(address);
    if (s == v.bgp.end()) {
      r.problems.push_back(d.name + ": no BGP session to " + address + " (" + p.peer_device + " over " + p.name + ")");
    } else if (s->second != "Established") {
      r.problems.push_back(d.name + ": BGP session to " + address + " (" + p.peer_device + " over " + p.name + ") is " +
                           s->second);
    } else if (d.role == Role::kTor) {
      // With the session up, every other ToR's subnet must be reached over this uplink
      // too — unless that ToR's own session to the same spine is down (found there).
      for (const Device* other : plan_.of_role(Role::kTor)) {
        if (other->name == d.name || other->plane != d.plane || !session_up(*other, p.peer_device)) continue;
        const std::string dst = to_string(other->subnet->prefix);
        auto route = v.routes.find(dst);
        bool over = route != v.routes.end() &&
                    std::find(route->second.begin(), route->second.end(), p.name) != route->second.end();
        if (!over) {
          size_t paths = route == v.routes.end() ? 0 : route->second.size();
          r.problems.push_back(d.name + "/" + p.name + " is missing from ECMP: " + dst + " over " + std::to_string(paths) +
                               " path(s), not this uplink, though its BGP session is up (maximum-paths? a policy?)");
          break;
        }
      }
    }
  }

  // Whether `tor` has an established session to `spine` on some cable between them.
  bool session_up(const Device& tor, const std::string& spine) const {
    const DeviceView* v = view(tor.name);
    if (!v) return false;
    for (const Port& p : tor.ports) {
      if (p.peer_device != spine || !p.address) continue;
      const Port* far = plan_.find(spine)->find_port(p.peer_port);
      auto s = v->bgp.find(to_string(far->address->base));
      if (s != v->bgp.end() && s->second == "Established") return true;
    }
    return false;
  }

  // Interfaces in use that the plan does not have: an extra cable.
  std::vector<PortReport> unplanned_ports(const Device& d) const {
    std::vector<PortReport> out;
    const DeviceView* v = view(d.name);
    if (!v) return out;
    for (const auto& [name, i] : v->interfaces) {
      if (name == "lo" || d.find_port(name) || (d.subnet && name == d.subnet->bridge)) continue;
      auto lldp = v->lldp.find(name);
      if (lldp == v->lldp.end() && !i.carrier) continue;
      PortReport r{d.name, name, "", "", {}};
      std::string words = d.name + "/" + name + ": a cable the plan does not have";
      if (lldp != v->lldp.end()) {
        r.actual = end_name(lldp->second.sysname, lldp->second.port);
        words += ", to " + lldp->second.sysname + " port " + lldp->second.port;
      }
      r.problems.push_back(words);
      out.push_back(std::move(r));
    }
    return out;
  }

  // What belongs to the device rather than a port: loopback, gateway.
  std::vector<std::string> device_problems(const Device& d) const {
    std::vector<std::string> out;
    const DeviceView* v = view(d.name);
    if (v && !v->lldp_error.empty()) out.push_back(d.name + ": its LLDP agent did not answer: " + v->lldp_error);
    if (!v || d.role == Role::kHost) return out;
    auto has = [&](const std::string& ifname, Prefix p) {
      auto it = v->interfaces.find(ifname);
      return it != v->interfaces.end() &&
             std::find(it->second.addresses.begin(), it->second.addresses.end(), p) != it->second.addresses.end();
    };
    if (!has("lo", Prefix{d.loopback, 32})) out.push_back(d.name + ": loopback " + to_string(d.loopback) + "/32 missing");
    if (d.subnet && !has(d.subnet->bridge, Prefix{d.subnet->gateway, d.subnet->prefix.length}))
      out.push_back(d.name + ": gateway " + to_string(Prefix{d.subnet->gateway, d.subnet->prefix.length}) +
                    " missing from " + d.subnet->bridge);
    return out;
  }

  const FabricPlan& plan_;
  const Observation& seen_;
  std::map<Endpoint, Endpoint> owner_of_;  // a port -> the planned port whose cable ends there
};

}  // namespace

size_t Report::failed() const {
  return size_t(std::count_if(ports.begin(), ports.end(), [](const PortReport& p) { return !p.pass(); }));
}

Report validate(const FabricPlan& plan, const Observation& observed) { return Validator(plan, observed).run(); }

std::string report_text(const Report& report, bool all) {
  std::ostringstream o;
  auto pad = [](std::string s, size_t w) { return s.size() < w ? s + std::string(w - s.size(), ' ') : s + " "; };
  o << pad("device", 9) << pad("port", 12) << pad("expected", 18) << pad("actual", 18) << pad("status", 7) << "problem\n";
  for (const PortReport& p : report.ports) {
    if (p.pass() && !all) continue;
    std::string first = p.problems.empty() ? "" : p.problems.front();
    o << pad(p.device, 9) << pad(p.port.empty() ? "-" : p.port, 12) << pad(p.expected.empty() ? "-" : p.expected, 18)
      << pad(p.actual.empty() ? "-" : p.actual, 18) << pad(p.pass() ? "pass" : "fail", 7) << first << "\n";
    for (size_t k = 1; k < p.problems.size(); ++k) o << std::string(64, ' ') << p.problems[k] << "\n";
  }
  size_t planned = std::count_if(report.ports.begin(), report.ports.end(), [](const PortReport& p) { return !p.expected.empty(); });
  o << planned << " planned ports checked; " << report.failed() << " finding(s)\n";
  return o.str();
}

std::string report_json(const Report& report) {
  nlohmann::ordered_json ports = nlohmann::ordered_json::array();
  for (const PortReport& p : report.ports) {
    size_t colon = p.actual.find(':');
    ports.push_back({{"device", p.device},
                     {"port", p.port},
                     {"cbl status", p.pass() ? "pass" : "fail"},
                     {"exp nbr", p.expected},
                     {"act nbr", p.actual},
                     {"sysname", colon == std::string::npos ? "" : p.actual.substr(0, colon)},
                     {"portID", colon == std::string::npos ? "" : p.actual.substr(colon + 1)},
                     {"match on", "IfName"},
                     {"problems", p.problems}});
  }
  nlohmann::ordered_json out = {{"failed", report.failed()}, {"ports", ports}};
  return out.dump(2) + "\n";
}

}  // namespace xm::ops
