// spec_to_yaml / spec_to_json / save_spec: ClusterSpec -> text.
//
// The field list lives once, in to_tree(); YAML and JSON are two renderings of that tree.
#include <charconv>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "topo/spec_io.h"

namespace xm::topo {
namespace {

using Tree = nlohmann::ordered_json;

Tree link_tree(const LinkSpec& l) { return Tree{{"gbps", l.gbps}, {"latency_ns", l.latency_ns}}; }

bool uniform(const ServerSpec& s) {
  return !s.nics.empty() && s.nics == uniform_nics(static_cast<uint32_t>(s.nics.size()), s.nics[0].gbps);
}

Tree to_tree(const ClusterSpec& spec) {
  Tree t;
  t["name"] = spec.name;
  t["servers"] = spec.servers;

  const ServerSpec& s = spec.server;
  Tree server;
  server["accelerators"] = s.accelerators;
  if (uniform(s)) {
    server["nics"] = s.nics.size();
    server["nic_gbps"] = s.nics[0].gbps;
  } else {
    server["nics"] = Tree::array();
    for (const NicSpec& nic : s.nics)
      server["nics"].push_back(Tree{{"name", nic.name}, {"rail", nic.rail}, {"gbps", nic.gbps}});
  }
  server["nic_ports"] = s.nic_ports;
  server["pcie"] = link_tree(s.pcie);
  server["intra"] = link_tree(s.intra);
  t["server"] = server;

  const FabricSpec& f = spec.fabric;
  Tree fabric;
  fabric["kind"] = to_string(f.kind);
  fabric["planes"] = f.planes;
  fabric["tor"] = Tree{{"ports", f.tor.ports},
                       {"servers", f.tor.servers},
                       {"uplinks", f.tor.uplinks},
                       {"host_latency_ns", f.tor.host_latency_ns}};
  if (f.agg)
    fabric["agg"] = Tree{{"ports", f.agg->ports},     {"tors", f.agg->tors},
                         {"count", f.agg->count},     {"uplinks", f.agg->uplinks},
                         {"link", link_tree(f.agg->link)}};
  if (f.core)
    fabric["core"] = Tree{
        {"ports", f.core->ports}, {"count", f.core->count}, {"link", link_tree(f.core->link)}};
  t["fabric"] = fabric;

  if (spec.frontend) {
    const FrontendSpec& fe = *spec.frontend;
    t["frontend"] = Tree{{"nic_gbps", fe.nic_gbps},
                         {"servers_per_tor", fe.servers_per_tor},
                         {"uplink", link_tree(fe.uplink)},
                         {"host_latency_ns", fe.host_latency_ns}};
  }
  return t;
}

// Shortest text that reads back as the same double; whole numbers without ".0".
std::string number_text(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  return std::string(buf, end);
}

bool plain_safe(const std::string& s) {
  static const char* reserved[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~"};
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.') return false;
  for (const char* r : reserved) {
    std::string lower;
    for (char c : s) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == r) return false;
  }
  return true;
}

std::string scalar_text(const Tree& v) {
  if (v.is_string()) return plain_safe(v.get<std::string>()) ? v.get<std::string>() : v.dump();
  if (v.is_number_float()) return number_text(v.get<double>());
  return v.dump();
}

bool is_leaf_map(const Tree& v) {
  if (!v.is_object()) return false;
  for (const auto& [k, x] : v.items())
    if (x.is_structured()) return false;
  return true;
}

std::string flow_map(const Tree& v) {
  std::string out = "{";
  for (const auto& [k, x] : v.items()) out += (out.size() > 1 ? ", " : "") + k + ": " + scalar_text(x);
  return out + "}";
}

void emit_yaml(const Tree& map, int indent, std::string& out) {
  std::string pad(indent, ' ');
  for (const auto& [key, v] : map.items()) {
    if (is_leaf_map(v) && v.size() <= 2) {
      out += pad + key + ": " + flow_map(v) + "\n";
    } else if (v.is_object()) {
      out += pad + key + ":\n";
      emit_yaml(v, indent + 2, out);
    } else if (v.is_array()) {
      out += pad + key + ":\n";
      for (const Tree& item : v) out += pad + "  - " + (item.is_object() ? flow_map(item) : scalar_text(item)) + "\n";
    } else {
      out += pad + key + ": " + scalar_text(v) + "\n";
    }
  }
}

}  // namespace

std::string spec_to_yaml(const ClusterSpec& spec) {
  std::string out = "# xingmai cluster spec (fields: docs/topology.md)\n";
  emit_yaml(to_tree(spec), 0, out);
  return out;
}

std::string spec_to_json(const ClusterSpec& spec) { return to_tree(spec).dump(2) + "\n"; }

Status save_spec(const ClusterSpec& spec, const std::string& path) {
  bool json = path.size() > 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  std::string text = json ? spec_to_json(spec) : spec_to_yaml(spec);
  if (path == "-") {
    std::cout << text;
    return Status::Ok();
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  if (!out) return Error{path + ": cannot write the cluster spec"};
  return Status::Ok();
}

}  // namespace xm::topo
