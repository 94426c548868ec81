#include "cli/topo_report.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/format.h"

namespace xm::cli {

using topo::Fabric;
using topo::NodeId;
using topo::NodeKind;

std::string summary_text(const topo::Summary& s, const std::string& source) {
  std::ostringstream o;
  auto row = [&](const char* label, const std::string& value) { o << "  " << label << value << "\n"; };
  o << "cluster " << s.name << " (" << source << "): "
    << (s.kind == topo::FabricKind::kClos ? "conventional" : "rail-optimized") << " Clos, " << s.tiers
    << (s.tiers == 1 ? " tier" : " tiers") << ", " << s.planes << (s.planes == 1 ? " plane" : " planes") << "\n";
  row("servers           ", with_commas(s.servers) + " × " + std::to_string(s.accelerators / s.servers) +
                              " = " + with_commas(s.accelerators) + " accelerators");
  row("NICs              ", with_commas(s.nics) + " (" + std::to_string(s.nics / s.servers) + " per server" +
                              (s.nic_ports > 1 ? ", " + std::to_string(s.nic_ports) + " ports each" : "") +
                              ")" + (s.kind == topo::FabricKind::kRailOptimized
                                         ? " on " + std::to_string(s.rails) + (s.rails == 1 ? " rail" : " rails")
                                         : ""));
  row("per server        ", bandwidth(s.server_gbps) + " back-end");
  for (const topo::TierSummary& t : s.tiers_detail)
    row(t.name == "tor" ? "ToR switches      " : t.name == "agg" ? "agg switches      " : "core switches     ",
        with_commas(t.switches) + " × " + std::to_string(t.ports) + " ports" +
            (t.links_up ? ", " + with_commas(t.links_up) + " uplinks" : ""));
  row("links             ", with_commas(s.links) + " (" + with_commas(s.host_links) + " NIC–ToR)");
  std::string over;
  bool blocking = false;
  for (const topo::TierSummary& t : s.tiers_detail) {
    if (t.up_gbps <= 0) continue;
    over += (over.empty() ? "" : ", ") + t.name + " " + ratio(t.oversubscription);
    blocking |= t.oversubscription > 1 + 1e-9;
  }
  row("oversubscription  ", over.empty() ? "none (one tier)" : over + (blocking ? "" : " (non-blocking)"));
  row("bisection         ", bandwidth(s.bisection_gbps) + " (" +
                              trimmed(s.host_gbps > 0 ? 100 * 2 * s.bisection_gbps / s.host_gbps : 0, 3) +
                              " % of full)");
  if (s.ecmp_paths)
    row("ECMP              ", with_commas(s.ecmp_paths) + (s.ecmp_paths == 1 ? " path" : " equal-cost paths") +
                              " across " + std::to_string(s.ecmp_switches) +
                              (s.ecmp_switches == 1 ? " switch" : " switches") + " between the farthest servers" +
                              (s.kind == topo::FabricKind::kRailOptimized ? " on one rail" : "") +
                              (s.ecmp_link_paths != s.ecmp_paths ? " (" + with_commas(s.ecmp_link_paths) + " counting parallel links)" : ""));
  if (s.front_tors)
    row("front-end         ", with_commas(s.front_tors) + " ToRs, " + bandwidth(s.front_server_gbps) +
                              " per server, apart from the back end");
  return o.str();
}

std::string summary_json(const topo::Summary& s, const std::string& source) {
  nlohmann::ordered_json j;
  j["source"] = source;
  j["name"] = s.name;
  j["kind"] = to_string(s.kind);
  j["tiers"] = s.tiers;
  j["planes"] = s.planes;
  j["servers"] = s.servers;
  j["accelerators"] = s.accelerators;
  j["nics"] = s.nics;
  j["nic_ports"] = s.nic_ports;
  j["rails"] = s.rails;
  j["server_gbps"] = s.server_gbps;
  j["nodes"] = s.nodes;
  j["links"] = s.links;
  j["host_links"] = s.host_links;
  j["switches"] = nlohmann::ordered_json::array();
  for (const topo::TierSummary& t : s.tiers_detail)
    j["switches"].push_back({{"tier", t.name}, {"count", t.switches}, {"ports", t.ports},
                             {"uplinks", t.links_up}, {"down_gbps", t.down_gbps}, {"up_gbps", t.up_gbps},
                             {"oversubscription", t.oversubscription}});
  j["host_gbps"] = s.host_gbps;
  j["bisection_gbps"] = s.bisection_gbps;
  j["ecmp_paths"] = s.ecmp_paths;
  j["ecmp_link_paths"] = s.ecmp_link_paths;
  j["front_tors"] = s.front_tors;
  return j.dump(2) + "\n";
}

namespace {

// The first ToR a NIC is cabled to.
NodeId tor_of(const Fabric& f, NodeId nic) {
  for (topo::LinkId l : f.links_of(nic))
    if (f.node(f.other_end(l, nic)).kind == NodeKind::kTor) return f.other_end(l, nic);
  return nic;  // unreachable: every NIC port is cabled
}

// Why two accelerators are, or are not, one ToR hop apart, in a network engineer's words.
std::string reason(const Fabric& f, NodeId a, NodeId b, const topo::PathSet& p) {
  if (f.node(a).group == f.node(b).group) return "same server: the intra-server switch joins them, no NIC involved";
  NodeId na = f.nic_of(a), nb = f.nic_of(b);
  uint32_t ra = f.rail_of(na), rb = f.rail_of(nb);
  std::string nics = f.name(a) + " sends through " + f.name(na) + " (rail " + std::to_string(ra) + "), " +
                     f.name(b) + " through " + f.name(nb) + " (rail " + std::to_string(rb) + ")";
  if (p.switches == 1) return "one ToR hop: " + nics + ", and both NICs reach the same ToR";
  NodeId ta = tor_of(f, na), tb = tor_of(f, nb);
  std::string tors = f.name(ta) + " and " + f.name(tb);
  if (f.spec().fabric.kind == topo::FabricKind::kRailOptimized && ra != rb)
    return "different rails: " + nics + "; each rail has its own ToR (" + tors +
           "), so the path climbs to a higher tier to cross between rails";
  if (f.node(ta).group != f.node(tb).group)
    return "different segments: " + nics + "; the servers' ToRs (" + tors + ") meet only at a higher tier";
  return nics + "; their ToRs (" + tors + ") meet only at a higher tier";
}

}  // namespace

std::string path_text(const Fabric& f, NodeId a, NodeId b, const topo::PathSet& p) {
  std::ostringstream o;
  o << f.name(a) << " -> " << f.name(b) << ": " << with_commas(p.paths) << " equal-cost path"
    << (p.paths == 1 ? "" : "s");
  if (p.link_paths != p.paths) o << " (" << with_commas(p.link_paths) << " counting parallel links)";
  o << ", " << p.links << " links, " << p.switches << (p.switches == 1 ? " switch" : " switches") << ", "
    << with_commas(p.latency_ns) << " ns propagation, bottleneck " << bandwidth(p.bottleneck_gbps) << "\n";
  o << "  " << reason(f, a, b, p) << "\n";
  for (const std::vector<NodeId>& path : p.examples) {
    o << "  ";
    for (size_t i = 0; i < path.size(); ++i) o << (i ? " -> " : "") << f.name(path[i]);
    o << "\n";
  }
  if (p.paths > p.examples.size()) o << "  ... and " << with_commas(p.paths - p.examples.size()) << " more\n";
  return o.str();
}

std::string path_json(const Fabric& f, NodeId a, NodeId b, const topo::PathSet& p) {
  nlohmann::ordered_json j;
  j["from"] = f.name(a);
  j["to"] = f.name(b);
  j["paths"] = p.paths;
  j["link_paths"] = p.link_paths;
  j["links"] = p.links;
  j["switches"] = p.switches;
  j["one_tor_hop"] = topo::one_tor_hop(f, a, b);
  j["latency_ns"] = p.latency_ns;
  j["bottleneck_gbps"] = p.bottleneck_gbps;
  j["reason"] = reason(f, a, b, p);
  j["examples"] = nlohmann::ordered_json::array();
  for (const std::vector<NodeId>& path : p.examples) {
    nlohmann::ordered_json hops = nlohmann::ordered_json::array();
    for (NodeId n : path) hops.push_back(f.name(n));
    j["examples"].push_back(hops);
  }
  return j.dump(2) + "\n";
}

std::string traffic_text(const topo::TrafficShare& t, const std::string& what, const std::string& source,
                         size_t demands) {
  double total = t.intra_server + t.one_tor_hop + t.cross;
  auto pct = [&](double part) { return trimmed(total > 0 ? 100 * part / total : 0, 3) + " %"; };
  auto num = [](double v) { return v == std::floor(v) && v < 9e18 ? with_commas(uint64_t(v)) : trimmed(v, 6); };
  std::ostringstream o;
  o << "traffic " << what << " on " << source << ": " << with_commas(demands) << " demands, " << num(total) << " bytes\n";
  o << "  inside a server        " << num(t.intra_server) << " (" << pct(t.intra_server) << ")\n";
  o << "  one ToR hop            " << num(t.one_tor_hop) << " (" << pct(t.one_tor_hop) << ")\n";
  o << "  above the ToRs         " << num(t.cross) << " (" << pct(t.cross) << ")\n";
  o << "  network bytes kept inside a rail: " << trimmed(100 * t.rail_share(), 3) << " %\n";
  return o.str();
}

std::string traffic_json(const topo::TrafficShare& t, const std::string& what, size_t demands) {
  nlohmann::ordered_json j{{"traffic", what},
                           {"demands", demands},
                           {"intra_server_bytes", t.intra_server},
                           {"one_tor_hop_bytes", t.one_tor_hop},
                           {"cross_bytes", t.cross},
                           {"rail_share", t.rail_share()}};
  return j.dump(2) + "\n";
}

std::string fabric_dot(const Fabric& f) {
  static const char* palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                  "#9467bd", "#8c564b", "#e377c2", "#17becf"};
  std::ostringstream o;
  auto id = [&](NodeId n) { return "\"" + f.name(n) + "\""; };
  o << "graph \"" << f.spec().name << "\" {\n  rankdir=BT; node [shape=box, fontsize=10];\n";
  for (uint32_t srv = 0; srv < f.spec().servers; ++srv) {
    o << "  subgraph cluster_srv" << srv << " { label=\"srv" << srv << "\";";
    for (uint32_t g = 0; g < f.spec().server.accelerators; ++g) o << " " << id(f.accelerator(srv, g)) << ";";
    for (uint32_t n = 0; n < f.spec().server.nics.size(); ++n) o << " " << id(f.nic(srv, n)) << ";";
    o << " " << id(f.intra_switch(srv)) << "; }\n";
  }
  for (NodeKind kind : {NodeKind::kTor, NodeKind::kAgg, NodeKind::kCore, NodeKind::kFrontTor}) {
    if (f.count(kind) == 0) continue;
    o << "  { rank=same;";
    for (NodeId n = f.first(kind); n < f.first(kind) + f.count(kind); ++n) o << " " << id(n) << ";";
    o << " }\n";
  }
  for (NodeId u = 0; u < f.node_count(); ++u) {
    auto links = f.links_of(u);
    for (size_t i = 0; i < links.size(); ++i) {
      NodeId v = f.other_end(links[i], u);
      size_t parallel = 1;
      while (i + 1 < links.size() && f.other_end(links[i + 1], u) == v) ++i, ++parallel;
      if (v < u) continue;  // each pair once
      o << "  " << id(u) << " -- " << id(v);
      std::string attrs;
      if (parallel > 1) attrs += "label=\"×" + std::to_string(parallel) + "\"";
      if (f.node(u).kind == NodeKind::kNic && f.node(v).kind == NodeKind::kTor)
        attrs += std::string(attrs.empty() ? "" : ", ") + "color=\"" + palette[f.rail_of(u) % 8] + "\"";
      o << (attrs.empty() ? "" : " [" + attrs + "]") << ";\n";
    }
  }
  o << "}\n";
  return o.str();
}

}  // namespace xm::cli
