#include "topo/spec.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>

namespace xm::topo {

const char* to_string(FabricKind kind) {
  switch (kind) {
    case FabricKind::kRailOptimized: return "rail-optimized";
    case FabricKind::kClos: return "clos";
  }
  return "?";
}

std::vector<NicSpec> uniform_nics(uint32_t count, double gbps) {
  std::vector<NicSpec> nics(count);
  for (uint32_t i = 0; i < count; ++i) nics[i] = {"nic" + std::to_string(i), i, gbps};
  return nics;
}

namespace {

// Division that yields 0 for a zero divisor, so `derive` never traps on a spec that
// `validate` is still examining.
uint64_t ceil_div(uint64_t a, uint64_t b) { return b ? (a + b - 1) / b : 0; }
uint32_t div_or_zero(uint32_t a, uint32_t b) { return b ? a / b : 0; }

// Collects issues; keeps validation code a flat list of checks.
class Checker {
 public:
  bool check(bool ok, std::string field, std::string message) {
    if (!ok) issues_.push_back({std::move(field), std::move(message)});
    return ok;
  }
  bool clean() const { return issues_.empty(); }
  std::vector<SpecIssue> take() { return std::move(issues_); }

 private:
  std::vector<SpecIssue> issues_;
};

std::string n(uint64_t v) { return std::to_string(v); }

// Names appear in messages, node names and files other tools read: printable ASCII.
bool printable(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char ch) { return ch >= 0x20 && ch <= 0x7e; });
}

// NIC names become node names ("srv3/mlx5_0"): they must not look like another node's.
bool device_name(const std::string& s) {
  if (s.empty() || s == "nvswitch" || s == "cpu" || s == "fe-nic") return false;
  if (s.size() > 3 && s.starts_with("gpu") &&
      std::all_of(s.begin() + 3, s.end(), [](char ch) { return std::isdigit(static_cast<unsigned char>(ch)); }))
    return false;
  return std::all_of(s.begin(), s.end(), [](char ch) {
    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-' || ch == '.' || ch == ':';
  });
}

void check_link(Checker& c, const LinkSpec& link, const std::string& field) {
  c.check(std::isfinite(link.gbps) && link.gbps > 0, field + ".gbps",
          "expected a bandwidth above 0 Gbit/s");
}

void check_server(Checker& c, const ServerSpec& s) {
  c.check(s.accelerators >= 1 && s.accelerators <= kMaxAcceleratorsPerServer,
          "server.accelerators", "expected 1 to " + n(kMaxAcceleratorsPerServer));
  c.check(!s.nics.empty() && s.nics.size() <= kMaxNicsPerServer, "server.nics",
          "expected 1 to " + n(kMaxNicsPerServer) + " NICs");
  c.check(s.nic_ports >= 1 && s.nic_ports <= kMaxNicPorts, "server.nic_ports",
          "expected 1 to " + n(kMaxNicPorts) + " ports per NIC");
  std::map<std::string, size_t> names;
  for (size_t i = 0; i < s.nics.size(); ++i) {
    const NicSpec& nic = s.nics[i];
    std::string field = "server.nics[" + n(i) + "]";
    c.check(device_name(nic.name), field + ".name",
            "expected a device name of letters, digits, '_', '-', '.' or ':' (e.g. mlx5_0), "
            "other than gpu<N>, nvswitch, cpu and fe-nic, got \"" + nic.name + "\"");
    auto [it, fresh] = names.emplace(nic.name, i);
    c.check(fresh, field + ".name",
            "duplicate NIC name \"" + nic.name + "\" (also server.nics[" + n(it->second) + "])");
    c.check(nic.rail < kMaxNicsPerServer, field + ".rail",
            "expected a rail index below " + n(kMaxNicsPerServer));
    c.check(std::isfinite(nic.gbps) && nic.gbps > 0, field + ".gbps",
            "expected a bandwidth above 0 Gbit/s");
  }
  check_link(c, s.pcie, "server.pcie");
  check_link(c, s.intra, "server.intra");
}

void check_fabric(Checker& c, const ClusterSpec& spec) {
  const FabricSpec& f = spec.fabric;
  const ServerSpec& s = spec.server;
  if (!c.check(f.planes >= 1 && f.planes <= kMaxPlanes, "fabric.planes",
               "expected 1 to " + n(kMaxPlanes) + " planes"))
    return;
  if (!c.check(s.nic_ports % f.planes == 0, "fabric.planes",
               n(f.planes) + " planes need every NIC to have a multiple of " + n(f.planes) +
                   " ports (server.nic_ports is " + n(s.nic_ports) + ")"))
    return;
  if (!c.clean()) return;  // the numbers below lean on a sane server

  const TorTier& tor = f.tor;
  bool ok = c.check(tor.ports >= 1 && tor.ports <= kMaxSwitchPorts, "fabric.tor.ports",
                    "expected 1 to " + n(kMaxSwitchPorts) + " ports");
  ok &= c.check(tor.servers >= 1, "fabric.tor.servers", "expected at least 1 server per ToR");
  if (!ok) return;
  Derived d = derive(spec);
  uint64_t need = uint64_t{d.tor_down_ports} + tor.uplinks;
  if (!c.check(need <= tor.ports, "fabric.tor.ports",
               n(tor.servers) + " servers × " + n(d.tor_down_ports / tor.servers) +
                   " NIC port(s) each + " + n(tor.uplinks) + " uplinks need " + n(need) +
                   " ports, but a ToR has " + n(tor.ports)))
    return;
  if (!f.agg) {
    c.check(tor.uplinks == 0, "fabric.tor.uplinks",
            "ToR uplinks need an aggregation tier (fabric.agg) to reach");
    c.check(!f.core, "fabric.core", "a core tier needs an aggregation tier (fabric.agg) below it");
    c.check(d.segments == 1, "fabric.agg",
            "missing: " + n(d.segments) + " segments of " + n(tor.servers) +
                " servers need an aggregation tier to reach each other");
    c.check(f.kind == FabricKind::kRailOptimized || d.tors_per_segment == 1, "fabric.agg",
            "missing: the " + n(d.tors_per_segment) + " ToRs of a segment need an aggregation tier");
    return;
  }

  const AggTier& agg = *f.agg;
  ok = c.check(agg.ports >= 1 && agg.ports <= kMaxSwitchPorts, "fabric.agg.ports",
               "expected 1 to " + n(kMaxSwitchPorts) + " ports");
  ok &= c.check(agg.count >= 1, "fabric.agg.count", "expected at least 1 aggregation switch per pod");
  ok &= c.check(agg.tors >= 1, "fabric.agg.tors", "expected at least 1 ToR per pod");
  ok &= c.check(tor.uplinks >= 1, "fabric.tor.uplinks",
                "expected at least 1 uplink per ToR when there is an aggregation tier");
  check_link(c, agg.link, "fabric.agg.link");
  if (!ok || !c.clean()) return;
  if (!c.check(tor.uplinks % agg.count == 0, "fabric.tor.uplinks",
               n(tor.uplinks) + " uplinks cannot be spread evenly over " + n(agg.count) +
                   " aggregation switches per pod"))
    return;
  if (!c.check(agg.tors % d.tors_per_segment == 0, "fabric.agg.tors",
               "expected a multiple of " + n(d.tors_per_segment) +
                   " (the ToRs of one segment), so no segment straddles two pods"))
    return;
  uint64_t agg_need = uint64_t{agg.tors} * d.links_tor_agg + agg.uplinks;
  if (!c.check(agg_need <= agg.ports, "fabric.agg.ports",
               n(agg.tors) + " ToRs × " + n(d.links_tor_agg) + " link(s) each + " +
                   n(agg.uplinks) + " uplinks need " + n(agg_need) +
                   " ports, but an aggregation switch has " + n(agg.ports)))
    return;
  if (!f.core) {
    c.check(agg.uplinks == 0, "fabric.agg.uplinks",
            "aggregation uplinks need a core tier (fabric.core) to reach");
    c.check(d.pods == 1, "fabric.core",
            "missing: " + n(d.pods) + " pods of " + n(agg.tors) +
                " ToRs need a core tier to reach each other");
    return;
  }

  const CoreTier& core = *f.core;
  ok = c.check(core.ports >= 1 && core.ports <= kMaxSwitchPorts, "fabric.core.ports",
               "expected 1 to " + n(kMaxSwitchPorts) + " ports");
  ok &= c.check(agg.uplinks >= 1, "fabric.agg.uplinks",
                "expected at least 1 uplink per aggregation switch when there is a core tier");
  ok &= c.check(core.count >= 1 && core.count % agg.count == 0, "fabric.core.count",
                "expected a positive multiple of fabric.agg.count (" + n(agg.count) +
                    "): agg i of every pod reaches core group i");
  check_link(c, core.link, "fabric.core.link");
  if (!ok || !c.clean()) return;
  if (!c.check(agg.uplinks % d.cores_per_group == 0, "fabric.agg.uplinks",
               n(agg.uplinks) + " uplinks cannot be spread evenly over the " +
                   n(d.cores_per_group) + " cores of a group"))
    return;
  uint64_t core_need = uint64_t{d.pods} * d.links_agg_core;
  c.check(core_need <= core.ports, "fabric.core.ports",
          n(d.pods) + " pods × " + n(d.links_agg_core) + " link(s) each need " + n(core_need) +
              " ports, but a core switch has " + n(core.ports));
}

void check_frontend(Checker& c, const FrontendSpec& fe) {
  c.check(std::isfinite(fe.nic_gbps) && fe.nic_gbps > 0, "frontend.nic_gbps",
          "expected a bandwidth above 0 Gbit/s");
  c.check(fe.servers_per_tor >= 1, "frontend.servers_per_tor", "expected at least 1");
  check_link(c, fe.uplink, "frontend.uplink");
}

// Keeps a typo (a segment of 1 server, a million servers) from asking for terabytes.
void check_size(Checker& c, const ClusterSpec& spec) {
  Derived d = derive(spec);
  const ServerSpec& s = spec.server;
  uint64_t per_server = uint64_t{s.accelerators} * 2 + s.nics.size() * (1 + s.nic_ports) + 4;
  uint64_t fabric = uint64_t{spec.fabric.planes} * d.tors_per_plane * (1 + spec.fabric.tor.uplinks);
  if (spec.fabric.agg) fabric += uint64_t{spec.fabric.planes} * d.pods * spec.fabric.agg->count * (1 + spec.fabric.agg->uplinks);
  if (spec.fabric.core) fabric += uint64_t{spec.fabric.planes} * spec.fabric.core->count;
  if (spec.frontend) per_server += 4;
  uint64_t total = uint64_t{spec.servers} * per_server + fabric;
  c.check(total <= kMaxGraphElements, "servers",
          "the fabric would have about " + n(total) + " nodes and links; the limit is " + n(kMaxGraphElements));
}

}  // namespace

std::vector<SpecIssue> validate(const ClusterSpec& spec) {
  Checker c;
  c.check(!spec.name.empty() && printable(spec.name), "name",
          "expected a non-empty cluster name of printable ASCII characters");
  c.check(spec.servers >= 1 && spec.servers <= kMaxServers, "servers",
          "expected 1 to " + n(kMaxServers) + " servers");
  check_server(c, spec.server);
  if (c.clean()) check_size(c, spec);
  if (c.clean()) check_fabric(c, spec);
  if (spec.frontend) check_frontend(c, *spec.frontend);
  return c.take();
}

Derived derive(const ClusterSpec& spec) {
  const FabricSpec& f = spec.fabric;
  const ServerSpec& s = spec.server;
  Derived d;
  std::map<uint32_t, uint32_t> per_rail;
  for (const NicSpec& nic : s.nics) ++per_rail[nic.rail];
  for (auto [rail, count] : per_rail) {
    d.rails.push_back(rail);
    d.max_nics_per_rail = std::max(d.max_nics_per_rail, count);
  }
  d.ports_per_plane = div_or_zero(s.nic_ports, f.planes);
  d.segments = static_cast<uint32_t>(ceil_div(spec.servers, f.tor.servers));
  bool rail = f.kind == FabricKind::kRailOptimized;
  d.tors_per_segment = (rail ? static_cast<uint32_t>(d.rails.size()) : 1) * d.ports_per_plane;
  d.tors_per_plane = d.segments * d.tors_per_segment;
  d.tor_down_ports =
      f.tor.servers * (rail ? d.max_nics_per_rail : static_cast<uint32_t>(s.nics.size()));
  if (f.agg) {
    d.tiers = 2;
    d.pods = static_cast<uint32_t>(ceil_div(d.tors_per_plane, f.agg->tors));
    d.links_tor_agg = div_or_zero(f.tor.uplinks, f.agg->count);
    if (f.core) {
      d.tiers = 3;
      d.cores_per_group = div_or_zero(f.core->count, f.agg->count);
      d.links_agg_core = div_or_zero(f.agg->uplinks, d.cores_per_group);
    }
  }
  return d;
}

double tor_down_gbps(const ClusterSpec& spec) {
  const ServerSpec& s = spec.server;
  std::map<uint32_t, double> per_tor;  // rail -> gbps (one key for a conventional Clos)
  for (const NicSpec& nic : s.nics) {
    uint32_t key = spec.fabric.kind == FabricKind::kRailOptimized ? nic.rail : 0;
    per_tor[key] += nic.gbps / s.nic_ports;
  }
  double busiest = 0;
  for (auto [key, gbps] : per_tor) busiest = std::max(busiest, gbps);
  return busiest * spec.fabric.tor.servers;
}

uint32_t uplinks_for_ratio(double down_gbps, double up_gbps, double ratio, uint32_t multiple) {
  // A hair of tolerance so 1.0 × 25600 / 400 stays 64, not 65 after rounding noise.
  double links = std::ceil(down_gbps / (ratio * up_gbps) - 1e-9);
  uint64_t whole = static_cast<uint64_t>(std::max(1.0, std::min(links, 1e9)));
  return static_cast<uint32_t>(ceil_div(whole, multiple) * multiple);
}

}  // namespace xm::topo
