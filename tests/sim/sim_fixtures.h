// Small hand-made topologies and helpers shared by the simulator tests.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>

#include "sim/cc/cc.h"
#include "sim/network.h"
#include "sim/topology.h"

namespace xm::sim::test {

// A fresh directory under the system's temp dir, this process's own; remove it when done.
inline std::filesystem::path temp_dir(const std::string& name) {
  std::filesystem::path d = std::filesystem::temp_directory_path() / ("xm_sim_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

// `hosts` hosts on one switch, every link at `gbps` with `delay_ns`.
inline SimTopology star(uint32_t hosts, double gbps = 100, double delay_ns = 1000) {
  SimTopology t;
  t.name = "star";
  t.hosts = hosts;
  for (uint32_t h = 0; h < hosts; ++h) {
    t.tier.push_back(Tier::kHost);
    t.names.push_back("h" + std::to_string(h));
    t.server.push_back(h);
    t.rail.push_back(0);
    t.links.push_back(SimLink{h, hosts, Rate::gbps(gbps), Time::ns(delay_ns)});
  }
  t.tier.push_back(Tier::kTor);
  t.names.push_back("sw");
  return t;
}

// Two switches joined by `trunks` links of `core_gbps`; hosts split evenly between them.
inline SimTopology dumbbell(uint32_t hosts, double gbps, double core_gbps, uint32_t trunks = 1) {
  SimTopology t;
  t.name = "dumbbell";
  t.hosts = hosts;
  for (uint32_t h = 0; h < hosts; ++h) {
    t.tier.push_back(Tier::kHost);
    t.names.push_back("h" + std::to_string(h));
    t.server.push_back(h);
    t.rail.push_back(0);
    t.links.push_back(SimLink{h, hosts + (h < hosts / 2 ? 0u : 1u), Rate::gbps(gbps), Time::ns(1000)});
  }
  for (int s = 0; s < 2; ++s) {
    t.tier.push_back(Tier::kTor);
    t.names.push_back("sw" + std::to_string(s));
  }
  for (uint32_t k = 0; k < trunks; ++k)
    t.links.push_back(SimLink{hosts, hosts + 1, Rate::gbps(core_gbps), Time::ns(1000)});
  return t;
}

inline std::unique_ptr<CongestionControl> cc(const std::string& name, double gbps = 100) {
  auto made = make_cc(name, Rate::gbps(gbps));
  if (!made) return nullptr;
  return std::move(made).value();
}

inline FlowSpec flow(uint32_t src, uint32_t dst, uint64_t bytes, Time start = Time()) {
  FlowSpec f;
  f.src = src, f.dst = dst, f.bytes = bytes, f.start = start;
  return f;
}

// Payload share of the wire for full packets.
inline double payload_fraction(const NetConfig& c, uint32_t int_bytes = 0) {
  return double(c.mtu_payload) / double(c.mtu_payload + c.header_bytes + c.wire_gap_bytes + int_bytes);
}

}  // namespace xm::sim::test
