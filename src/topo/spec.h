// The cluster spec: the one description of a cluster that every part of xingmai reads.
//
// People write it in YAML (programs may use the JSON form; see spec_io.h); the builder
// (fabric_builder.h) turns it into a fabric graph. A spec is plain data: copyable,
// comparable, with defaults that describe the seed's server (8 accelerators, 8 NICs of
// 400 Gbit/s, NIC i on rail i). `validate` says whether the numbers can be built.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace xm::topo {

enum class FabricKind : uint8_t {
  kRailOptimized,  // NIC r of every server in a segment goes to rail r's ToR
  kClos,           // every NIC of a server goes to the same ToR (conventional fat-tree)
};

const char* to_string(FabricKind kind);

struct LinkSpec {
  double gbps = 400;
  uint32_t latency_ns = 1000;
  bool operator==(const LinkSpec&) const = default;
};

struct NicSpec {
  std::string name;   // device name (e.g. "mlx5_0"), unique within a server
  uint32_t rail = 0;  // rail index: which ToR of the segment the NIC's ports reach
  double gbps = 400;  // whole NIC; split evenly over its ports
  bool operator==(const NicSpec&) const = default;
};

// `count` NICs of `gbps`, NIC i named "nic<i>" on rail i.
std::vector<NicSpec> uniform_nics(uint32_t count, double gbps);

struct ServerSpec {
  uint32_t accelerators = 8;
  std::vector<NicSpec> nics = uniform_nics(8, 400);  // back-end NICs
  uint32_t nic_ports = 1;            // ports per NIC: 2 = dual-homed, or one per plane
  LinkSpec pcie{512, 100};           // accelerator <-> its NIC
  LinkSpec intra{3600, 25};          // accelerator <-> intra-server switch (NVSwitch role)
  bool operator==(const ServerSpec&) const = default;
};

struct TorTier {
  uint32_t ports = 128;    // switch radix
  uint32_t servers = 64;   // servers whose NICs land on one ToR: the segment size
  uint32_t uplinks = 0;    // links from each ToR to the aggregation tier
  uint32_t host_latency_ns = 500;  // NIC port <-> ToR; the speed is the NIC port's
  bool operator==(const TorTier&) const = default;
};

struct AggTier {             // one pod: `tors` ToRs fully meshed with `count` aggs
  uint32_t ports = 128;
  uint32_t tors = 64;        // ToRs per pod (the last pod may hold fewer)
  uint32_t count = 64;       // aggregation switches per pod
  uint32_t uplinks = 0;      // links from each agg to the core tier
  LinkSpec link{400, 1000};  // ToR <-> agg
  bool operator==(const AggTier&) const = default;
};

struct CoreTier {            // agg i of every pod reaches core group i
  uint32_t ports = 128;
  uint32_t count = 0;        // core switches per plane, split evenly over agg.count groups
  LinkSpec link{400, 1000};  // agg <-> core
  bool operator==(const CoreTier&) const = default;
};

struct FabricSpec {
  FabricKind kind = FabricKind::kRailOptimized;
  uint32_t planes = 1;       // independent copies of the fabric; NIC port p -> plane p % planes
  TorTier tor;
  std::optional<AggTier> agg;    // absent: one tier
  std::optional<CoreTier> core;  // absent: at most two tiers
  bool operator==(const FabricSpec&) const = default;
};

// A separate north-south network: one NIC per server on front-end ToRs joined by a spine.
struct FrontendSpec {
  double nic_gbps = 200;
  uint32_t servers_per_tor = 32;
  LinkSpec uplink{400, 1000};    // front-end ToR <-> spine (one link per ToR)
  uint32_t host_latency_ns = 500;
  bool operator==(const FrontendSpec&) const = default;
};

struct ClusterSpec {
  std::string name = "xingmai";
  uint32_t servers = 1;
  ServerSpec server;
  FabricSpec fabric;
  std::optional<FrontendSpec> frontend;
  bool operator==(const ClusterSpec&) const = default;
};

// Numbers that follow from a spec; computed once by `derive`. Precondition for
// everything below: validate(spec) returned no issue.
struct Derived {
  std::vector<uint32_t> rails;     // distinct rail indices, ascending
  uint32_t max_nics_per_rail = 1;  // NICs of one server that share a rail
  uint32_t ports_per_plane = 1;    // NIC ports of one NIC that land in each plane
  uint32_t segments = 1;           // groups of tor.servers servers
  uint32_t tors_per_segment = 1;   // per plane
  uint32_t tors_per_plane = 1;
  uint32_t tor_down_ports = 0;     // ports of one ToR facing NICs (a full segment)
  uint32_t pods = 1;
  uint32_t links_tor_agg = 0;      // parallel links between a ToR and each agg of its pod
  uint32_t cores_per_group = 0;
  uint32_t links_agg_core = 0;     // parallel links between an agg and each core of its group
  uint32_t tiers = 1;
};

struct SpecIssue {
  std::string field;    // dotted path, e.g. "fabric.tor.ports"
  std::string message;  // what is wrong and what was expected
};

// Everything that makes the spec impossible to build, in field order; empty when it can be.
std::vector<SpecIssue> validate(const ClusterSpec& spec);

// Meaningful when validate(spec) is empty; on other specs it returns zeros, never traps.
Derived derive(const ClusterSpec& spec);

// NIC-facing bandwidth of the busiest ToR (a full segment), in Gbit/s.
double tor_down_gbps(const ClusterSpec& spec);

// The fewest uplinks, a multiple of `multiple`, whose bandwidth `up_gbps` each keeps
// down:up at or below `ratio` (1 = non-blocking). Precondition: all arguments positive.
uint32_t uplinks_for_ratio(double down_gbps, double up_gbps, double ratio, uint32_t multiple);

// Hard limits that keep a typo from asking for terabytes.
inline constexpr uint32_t kMaxServers = 1u << 20;
inline constexpr uint32_t kMaxAcceleratorsPerServer = 256;
inline constexpr uint32_t kMaxNicsPerServer = 64;
inline constexpr uint32_t kMaxNicPorts = 8;
inline constexpr uint32_t kMaxPlanes = 8;
inline constexpr uint32_t kMaxSwitchPorts = 4096;
inline constexpr uint64_t kMaxGraphElements = uint64_t{1} << 27;  // nodes + links, ~2 GiB

}  // namespace xm::topo
