#include "topo/fabric.h"

#include <charconv>

namespace xm::topo {

const char* to_string(NodeKind kind) {
  switch (kind) {
    case NodeKind::kAccelerator: return "accelerator";
    case NodeKind::kNic: return "nic";
    case NodeKind::kIntraSwitch: return "intra-switch";
    case NodeKind::kHost: return "host";
    case NodeKind::kFrontNic: return "front-nic";
    case NodeKind::kTor: return "tor";
    case NodeKind::kAgg: return "agg";
    case NodeKind::kCore: return "core";
    case NodeKind::kFrontTor: return "front-tor";
    case NodeKind::kFrontSpine: return "front-spine";
  }
  return "?";
}

bool is_fabric_switch(NodeKind kind) {
  return kind == NodeKind::kTor || kind == NodeKind::kAgg || kind == NodeKind::kCore;
}

NodeId Fabric::accelerator(uint32_t server, uint32_t local) const {
  return first(NodeKind::kAccelerator) + server * spec_.server.accelerators + local;
}

NodeId Fabric::nic(uint32_t server, uint32_t index) const {
  return first(NodeKind::kNic) + server * uint32_t(spec_.server.nics.size()) + index;
}

NodeId Fabric::intra_switch(uint32_t server) const { return first(NodeKind::kIntraSwitch) + server; }

NodeId Fabric::nic_of(NodeId accelerator) const {
  for (LinkId l : links_of(accelerator)) {
    NodeId peer = other_end(l, accelerator);
    if (nodes_[peer].kind == NodeKind::kNic) return peer;
  }
  return accelerator;  // unreachable for a built fabric: every accelerator has a NIC
}

uint32_t Fabric::rail_of(NodeId nic) const { return spec_.server.nics[nodes_[nic].local].rail; }

std::string Fabric::name(NodeId id) const {
  const Node& n = nodes_[id];
  std::string server = "srv" + std::to_string(n.group) + "/";
  std::string plane = spec_.fabric.planes > 1 ? "p" + std::to_string(n.plane) + "." : "";
  uint32_t ppp = derived_.ports_per_plane;
  switch (n.kind) {
    case NodeKind::kAccelerator: return server + "gpu" + std::to_string(n.local);
    case NodeKind::kNic: return server + spec_.server.nics[n.local].name;
    case NodeKind::kIntraSwitch: return server + "nvswitch";
    case NodeKind::kHost: return server + "cpu";
    case NodeKind::kFrontNic: return server + "fe-nic";
    case NodeKind::kTor: {
      std::string out = plane + "tor-s" + std::to_string(n.group);
      uint32_t slot = n.local;
      if (spec_.fabric.kind == FabricKind::kRailOptimized)
        out += "-r" + std::to_string(derived_.rails[slot / ppp]);
      if (ppp > 1) out += char('a' + slot % ppp);
      return out;
    }
    case NodeKind::kAgg:
      return plane + "agg-p" + std::to_string(n.group) + "-" + std::to_string(n.local);
    case NodeKind::kCore:
      return plane + "core-g" + std::to_string(n.group) + "-" + std::to_string(n.local);
    case NodeKind::kFrontTor: return "fe-tor" + std::to_string(n.group);
    case NodeKind::kFrontSpine: return "fe-spine";
  }
  return "?";
}

namespace {

// Parses all of `text` as a decimal number.
std::optional<uint64_t> whole(std::string_view text) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

Result<NodeId> Fabric::find(std::string_view name) const {
  uint64_t accelerators = count(NodeKind::kAccelerator);
  auto global = [&](std::optional<uint64_t> index) -> std::optional<NodeId> {
    if (index && *index < accelerators) return first(NodeKind::kAccelerator) + NodeId(*index);
    return std::nullopt;
  };
  if (auto id = global(whole(name))) return *id;
  if (name.starts_with("gpu"))
    if (auto id = global(whole(name.substr(3)))) return *id;
  if (name.starts_with("srv")) {  // srv<S>/gpu<L>: parsed, since it is the common case
    size_t slash = name.find("/gpu");
    auto server = whole(name.substr(3, slash == std::string_view::npos ? 0 : slash - 3));
    auto local = slash == std::string_view::npos ? std::nullopt : whole(name.substr(slash + 4));
    if (server && local && *server < spec_.servers && *local < spec_.server.accelerators)
      return accelerator(uint32_t(*server), uint32_t(*local));
  }
  for (NodeId id = 0; id < nodes_.size(); ++id)
    if (this->name(id) == name) return id;
  return Error{"no node named \"" + std::string(name) + "\" (accelerators are srv<S>/gpu<L>, gpu<N> or <N> below " +
               std::to_string(accelerators) + ")"};
}

}  // namespace xm::topo
