// parse_spec / load_spec: YAML text -> ClusterSpec, with errors that point at the line.
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "topo/spec_io.h"

namespace xm::topo {
namespace {

// Thrown inside the reader only; parse_spec turns it into an Error.
struct SpecError {
  std::string text;
};

// Where each field was found, so errors found later (by validate) can name a line.
class Source {
 public:
  explicit Source(std::string name) : name_(std::move(name)) {}

  std::string where(const YAML::Mark& m) const {
    if (m.is_null()) return name_;
    return name_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  [[noreturn]] void fail(const YAML::Mark& m, const std::string& field,
                         const std::string& message) const {
    throw SpecError{where(m) + ": " + (field.empty() ? "" : field + ": ") + message};
  }
  void remember(const std::string& field, const YAML::Mark& m) { marks_[field] = m; }

  // The mark of `field`, or of its nearest enclosing field that was read.
  YAML::Mark mark_of(std::string field) const {
    while (!field.empty()) {
      if (auto it = marks_.find(field); it != marks_.end()) return it->second;
      size_t cut = field.find_last_of(".[");
      field = cut == std::string::npos ? "" : field.substr(0, cut);
    }
    return YAML::Mark::null_mark();
  }

 private:
  std::string name_;
  std::map<std::string, YAML::Mark> marks_;
};

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "\"" + node.Scalar() + "\"";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    default: return "an undefined value";
  }
}

std::string join(std::initializer_list<const char*> keys) {
  std::string out;
  for (const char* k : keys) out += (out.empty() ? "" : ", ") + std::string(k);
  return out;
}

// One YAML mapping of the spec: knows its path, refuses unknown and repeated keys.
class Section {
 public:
  Section(Source& src, const YAML::Node& node, std::string path,
          std::initializer_list<const char*> known)
      : src_(src), path_(std::move(path)), mark_(path_.empty() ? node.Mark() : src.mark_of(path_)) {
    if (!node.IsMap()) src_.fail(node.Mark(), path_, "expected a mapping, got " + describe(node));
    std::set<std::string> allowed(known.begin(), known.end());
    for (const auto& kv : node) {
      const YAML::Node& key = kv.first;
      std::string name = key.IsScalar() ? key.Scalar() : "";
      std::string field = child(name);
      if (!key.IsScalar()) src_.fail(key.Mark(), path_, "expected a field name, got " + describe(key));
      if (!allowed.count(name))
        src_.fail(key.Mark(), field, "unknown field (expected one of: " + join(known) + ")");
      if (!entries_.emplace(name, kv.second).second)
        src_.fail(key.Mark(), field, "duplicate field");
      src_.remember(field, key.Mark());
    }
  }

  bool has(const std::string& key) const { return entries_.count(key) > 0; }
  const YAML::Node& node(const std::string& key) const { return entries_.at(key); }
  std::string child(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }
  Source& source() const { return src_; }

  void require(const std::string& key, const std::string& why) const {
    if (!has(key)) src_.fail(mark(), child(key), "missing field: " + why);
  }
  YAML::Mark mark() const { return mark_; }

  void read(const std::string& key, uint32_t& out) const {
    if (has(key)) out = to_u32(node(key), child(key));
  }
  void read(const std::string& key, double& out) const {
    if (has(key)) out = to_double(node(key), child(key));
  }
  void read(const std::string& key, std::string& out) const {
    if (has(key)) out = to_string(node(key), child(key));
  }

  uint32_t to_u32(const YAML::Node& n, const std::string& field) const {
    std::string text = scalar(n, field, "a whole number");
    uint64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range || (ec == std::errc() && value > UINT32_MAX))
      src_.fail(n.Mark(), field, "expected a whole number up to 4294967295, got " + describe(n));
    if (ec != std::errc() || end != text.data() + text.size())
      src_.fail(n.Mark(), field, "expected a whole number, got " + describe(n));
    return static_cast<uint32_t>(value);
  }
  double to_double(const YAML::Node& n, const std::string& field) const {
    std::string text = scalar(n, field, "a number");
    char* end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(value))
      src_.fail(n.Mark(), field, "expected a number, got " + describe(n));
    return value;
  }
  std::string to_string(const YAML::Node& n, const std::string& field) const {
    return scalar(n, field, "a string");
  }

 private:
  std::string scalar(const YAML::Node& n, const std::string& field, const char* what) const {
    if (!n.IsScalar()) src_.fail(n.Mark(), field, std::string("expected ") + what + ", got " + describe(n));
    return n.Scalar();
  }

  Source& src_;
  std::string path_;
  YAML::Mark mark_;  // of the key that opens this section (of the document, at the top)
  std::map<std::string, YAML::Node> entries_;
};

void read_link(const Section& parent, const std::string& key, LinkSpec& link) {
  if (!parent.has(key)) return;
  Section s(parent.source(), parent.node(key), parent.child(key), {"gbps", "latency_ns"});
  s.read("gbps", link.gbps);
  s.read("latency_ns", link.latency_ns);
}

void read_nics(const Section& server, ServerSpec& out) {
  Source& src = server.source();
  bool has_speed = server.has("nic_gbps");
  double gbps = 400;
  server.read("nic_gbps", gbps);
  if (!server.has("nics")) {
    out.nics = uniform_nics(static_cast<uint32_t>(out.nics.size()), gbps);
    return;
  }
  const YAML::Node& nics = server.node("nics");
  std::string field = server.child("nics");
  if (nics.IsScalar()) {
    uint32_t count = server.to_u32(nics, field);
    if (count > kMaxNicsPerServer)
      src.fail(nics.Mark(), field, "expected 1 to " + std::to_string(kMaxNicsPerServer) + " NICs");
    out.nics = uniform_nics(count, gbps);
    return;
  }
  if (!nics.IsSequence())
    src.fail(nics.Mark(), field, "expected a NIC count or a list of NICs, got " + describe(nics));
  if (has_speed)
    src.fail(src.mark_of(server.child("nic_gbps")), server.child("nic_gbps"),
             "applies to the count form of server.nics only; give each listed NIC its gbps");
  if (nics.size() > kMaxNicsPerServer)
    src.fail(nics.Mark(), field, "expected 1 to " + std::to_string(kMaxNicsPerServer) + " NICs");
  out.nics.clear();
  for (size_t i = 0; i < nics.size(); ++i) {
    std::string item = field + "[" + std::to_string(i) + "]";
    src.remember(item, nics[i].Mark());
    Section nic(src, nics[i], item, {"name", "rail", "gbps"});
    nic.require("rail", "which rail this NIC is on");
    nic.require("gbps", "the NIC's bandwidth in Gbit/s");
    NicSpec spec{"nic" + std::to_string(i), 0, 0};
    nic.read("name", spec.name);
    nic.read("rail", spec.rail);
    nic.read("gbps", spec.gbps);
    out.nics.push_back(spec);
  }
}

ServerSpec read_server(const Section& parent) {
  ServerSpec out;
  if (!parent.has("server")) return out;
  Section s(parent.source(), parent.node("server"), "server",
            {"accelerators", "nics", "nic_gbps", "nic_ports", "pcie", "intra"});
  s.read("accelerators", out.accelerators);
  s.read("nic_ports", out.nic_ports);
  read_nics(s, out);
  read_link(s, "pcie", out.pcie);
  read_link(s, "intra", out.intra);
  return out;
}

FabricKind read_kind(const Section& f) {
  std::string kind;
  f.read("kind", kind);
  if (kind == "rail-optimized") return FabricKind::kRailOptimized;
  if (kind == "clos") return FabricKind::kClos;
  f.source().fail(f.source().mark_of(f.child("kind")), f.child("kind"),
                  "expected rail-optimized or clos, got \"" + kind + "\"");
}

// A tier states its uplinks either as a count or as a down:up bandwidth ratio.
std::optional<double> read_uplinks(const Section& s, uint32_t& uplinks) {
  if (s.has("uplinks") && s.has("oversubscription"))
    s.source().fail(s.source().mark_of(s.child("oversubscription")), s.child("oversubscription"),
                    "give uplinks or oversubscription, not both");
  s.read("uplinks", uplinks);
  if (!s.has("oversubscription")) return std::nullopt;
  double ratio = 0;
  s.read("oversubscription", ratio);
  if (!(ratio >= 1 && ratio <= 1000))
    s.source().fail(s.source().mark_of(s.child("oversubscription")), s.child("oversubscription"),
                    "expected a down:up ratio from 1 (non-blocking) to 1000");
  // Later errors about the uplinks point at the ratio they came from.
  s.source().remember(s.child("uplinks"), s.source().mark_of(s.child("oversubscription")));
  return ratio;
}

void read_fabric(const Section& parent, ClusterSpec& spec) {
  Source& src = parent.source();
  parent.require("fabric", "the back-end fabric (kind and tiers)");
  Section f(src, parent.node("fabric"), "fabric", {"kind", "planes", "tor", "agg", "core"});
  f.require("kind", "rail-optimized or clos");
  f.require("tor", "the ToR tier");
  FabricSpec& out = spec.fabric;
  out.kind = read_kind(f);
  f.read("planes", out.planes);

  Section tor(src, f.node("tor"), "fabric.tor",
              {"ports", "servers", "uplinks", "oversubscription", "host_latency_ns"});
  tor.require("servers", "servers whose NICs land on one ToR (the segment size)");
  tor.read("ports", out.tor.ports);
  tor.read("servers", out.tor.servers);
  tor.read("host_latency_ns", out.tor.host_latency_ns);
  std::optional<double> tor_ratio = read_uplinks(tor, out.tor.uplinks);

  std::optional<double> agg_ratio;
  if (f.has("agg")) {
    Section agg(src, f.node("agg"), "fabric.agg",
                {"ports", "tors", "count", "uplinks", "oversubscription", "link"});
    agg.require("tors", "ToRs per pod");
    agg.require("count", "aggregation switches per pod");
    AggTier a;
    agg.read("ports", a.ports);
    agg.read("tors", a.tors);
    agg.read("count", a.count);
    read_link(agg, "link", a.link);
    agg_ratio = read_uplinks(agg, a.uplinks);
    out.agg = a;
    if (!tor.has("uplinks") && !tor_ratio)
      src.fail(tor.mark(), "fabric.tor.uplinks", "missing field: give uplinks or oversubscription");
  }
  if (f.has("core")) {
    Section core(src, f.node("core"), "fabric.core", {"ports", "count", "link"});
    core.require("count", "core switches per plane");
    CoreTier c;
    core.read("ports", c.ports);
    core.read("count", c.count);
    read_link(core, "link", c.link);
    out.core = c;
  }
  if (tor_ratio && !out.agg)
    src.fail(src.mark_of("fabric.tor.oversubscription"), "fabric.tor.oversubscription",
             "needs an aggregation tier (fabric.agg) for the uplinks to reach");
  if (agg_ratio && !out.core)
    src.fail(src.mark_of("fabric.agg.oversubscription"), "fabric.agg.oversubscription",
             "needs a core tier (fabric.core) for the uplinks to reach");
  // Ratios become uplink counts once every speed they depend on is known.
  if (tor_ratio && out.agg && out.agg->count > 0 && out.agg->link.gbps > 0 && out.tor.servers > 0)
    out.tor.uplinks = uplinks_for_ratio(tor_down_gbps(spec), out.agg->link.gbps, *tor_ratio,
                                        out.agg->count);
  if (agg_ratio && out.agg && out.core && out.agg->count > 0 && out.core->link.gbps > 0) {
    Derived d = derive(spec);
    double down = double(out.agg->tors) * d.links_tor_agg * out.agg->link.gbps;
    out.agg->uplinks = uplinks_for_ratio(down, out.core->link.gbps, *agg_ratio,
                                         std::max(1u, d.cores_per_group));
  }
}

FrontendSpec read_frontend(const Section& parent) {
  Section s(parent.source(), parent.node("frontend"), "frontend",
            {"nic_gbps", "servers_per_tor", "uplink", "host_latency_ns"});
  FrontendSpec out;
  s.read("nic_gbps", out.nic_gbps);
  s.read("servers_per_tor", out.servers_per_tor);
  s.read("host_latency_ns", out.host_latency_ns);
  read_link(s, "uplink", out.uplink);
  return out;
}

ClusterSpec read_cluster(Source& src, const YAML::Node& root) {
  if (!root.IsDefined() || root.IsNull())
    src.fail(YAML::Mark::null_mark(), "", "empty document: expected a cluster spec mapping");
  Section top(src, root, "", {"name", "servers", "server", "fabric", "frontend"});
  top.require("servers", "how many servers the cluster has");
  ClusterSpec spec;
  top.read("name", spec.name);
  top.read("servers", spec.servers);
  spec.server = read_server(top);
  read_fabric(top, spec);
  if (top.has("frontend")) spec.frontend = read_frontend(top);
  return spec;
}

}  // namespace

Result<ClusterSpec> parse_spec(std::string_view text, const std::string& source) {
  Source src(source);
  try {
    YAML::Node root = YAML::Load(std::string(text));
    ClusterSpec spec = read_cluster(src, root);
    std::vector<SpecIssue> issues = validate(spec);
    if (!issues.empty()) {
      const SpecIssue& first = issues.front();
      src.fail(src.mark_of(first.field), first.field, first.message);
    }
    return spec;
  } catch (const SpecError& e) {
    return Error{e.text};
  } catch (const YAML::Exception& e) {
    return Error{src.where(e.mark) + ": bad YAML: " + e.msg};
  }
}

Result<ClusterSpec> load_spec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{path + ": cannot open the cluster spec"};
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Error{path + ": cannot read the cluster spec"};
  return parse_spec(text.str(), path);
}

}  // namespace xm::topo
