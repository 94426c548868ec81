// The fabric graph: every accelerator, NIC, intra-server switch and fabric switch of a
// cluster as a node, every cable (or PCIe / NVLink attachment) as a link.
//
// Built once from a validated spec by build_fabric() and then read-only: safe to share
// between threads. Compact on purpose (8 bytes a node, 16 a link, adjacency in CSR
// form), so a 100k-accelerator fabric takes tens of megabytes. Node ids are dense and
// grouped by kind in the order of NodeKind, so kind ranges are contiguous.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "topo/spec.h"
#include "util/result.h"

namespace xm::topo {

using NodeId = uint32_t;
using LinkId = uint32_t;

enum class NodeKind : uint8_t {
  kAccelerator,
  kNic,
  kIntraSwitch,  // the NVSwitch-like fabric inside a server
  kHost,         // the server's CPU side: owns the front-end NIC, nothing on the back end
  kFrontNic,
  kTor,
  kAgg,
  kCore,
  kFrontTor,
  kFrontSpine,
};
inline constexpr size_t kNodeKinds = 10;
const char* to_string(NodeKind kind);
bool is_fabric_switch(NodeKind kind);  // ToR, agg or core of the back-end fabric

struct Node {
  NodeKind kind;
  uint8_t plane;   // fabric plane of a switch; 0 elsewhere
  uint16_t local;  // index in the server (accelerator, NIC), ToR slot in its segment,
                   // agg index in its pod, core index in its group
  uint32_t group;  // server; ToR: segment; agg: pod; core: group; front ToR: its index
};

struct Link {
  NodeId a;  // the end nearer the accelerators
  NodeId b;
  float gbps;
  uint32_t latency_ns;
};

class Fabric {
 public:
  const ClusterSpec& spec() const { return spec_; }
  const Derived& derived() const { return derived_; }

  size_t node_count() const { return nodes_.size(); }
  size_t link_count() const { return links_.size(); }
  const Node& node(NodeId id) const { return nodes_[id]; }
  const Link& link(LinkId id) const { return links_[id]; }
  NodeId other_end(LinkId id, NodeId from) const {
    return links_[id].a == from ? links_[id].b : links_[id].a;
  }
  // The links at `id`, ordered by the node at their other end (parallel links adjacent).
  std::span<const LinkId> links_of(NodeId id) const {
    return {adjacency_.data() + adjacency_begin_[id], adjacency_.data() + adjacency_begin_[id + 1]};
  }

  // Nodes of one kind are the contiguous ids [first(kind), first(kind) + count(kind)).
  NodeId first(NodeKind kind) const { return kind_begin_[size_t(kind)]; }
  uint32_t count(NodeKind kind) const {
    return kind_begin_[size_t(kind) + 1] - kind_begin_[size_t(kind)];
  }

  NodeId accelerator(uint32_t server, uint32_t local) const;  // preconditions: in range
  NodeId nic(uint32_t server, uint32_t index) const;
  NodeId intra_switch(uint32_t server) const;
  // The NIC an accelerator sends through (the first, when it has several).
  NodeId nic_of(NodeId accelerator) const;
  // The rail of a NIC node (its spec entry's rail).
  uint32_t rail_of(NodeId nic) const;

  // "srv3/gpu5", "srv3/nic5", "tor-s0-r5", "p1.agg-p2-7", "core-g4-0", ...
  std::string name(NodeId id) const;
  // Accepts any name() form; accelerators also as "gpu<global index>" or "<global index>".
  Result<NodeId> find(std::string_view name) const;

 private:
  friend class FabricBuilder;
  ClusterSpec spec_;
  Derived derived_;
  std::vector<Node> nodes_;
  std::vector<Link> links_;
  std::vector<uint32_t> adjacency_begin_;  // node_count() + 1 offsets into adjacency_
  std::vector<LinkId> adjacency_;
  std::array<NodeId, kNodeKinds + 1> kind_begin_{};
};

// Builds the graph of a spec. Returns an Error listing the first issue if
// validate(spec) finds any; never aborts on a spec.
Result<Fabric> build_fabric(const ClusterSpec& spec);

}  // namespace xm::topo
