// Where a collective's ranks sit on the simulated cluster, and what the tuner sees of it.
#include <algorithm>

#include "sim/collective/collective.h"

namespace xm::sim {

Result<Placement> place(const CollectiveOptions& c, const SimTopology& t) {
  if (t.accelerator_nic.empty())
    return Error{"collective traffic needs accelerators: give the topology as {spec: <cluster spec>}"};
  const uint32_t servers = uint32_t(t.accelerator_nic.size()), accelerators = uint32_t(t.accelerator_nic[0].size());
  if (c.first_server >= servers)
    return Error{"ranks.first_server: " + std::to_string(c.first_server) + ", but the spec has " +
                 std::to_string(servers) + " servers"};
  if (c.first_local >= accelerators)
    return Error{"ranks.first_local: " + std::to_string(c.first_local) + ", but a server has " +
                 std::to_string(accelerators) + " accelerators"};
  const uint32_t stride = std::max<uint32_t>(c.server_stride, 1);
  const uint32_t S = c.servers ? c.servers : (servers - c.first_server + stride - 1) / stride;
  const uint32_t L = c.per_server ? c.per_server : accelerators - c.first_local;
  if (c.first_server + uint64_t(S - 1) * stride >= servers)
    return Error{"ranks.servers: " + std::to_string(S) + " from server " + std::to_string(c.first_server) +
                 (stride > 1 ? " every " + std::to_string(stride) : std::string()) + " is more than the spec's " +
                 std::to_string(servers)};
  if (c.first_local + L > accelerators)
    return Error{"ranks.per_server: " + std::to_string(L) + " from accelerator " + std::to_string(c.first_local) +
                 " is more than a server's " + std::to_string(accelerators)};
  if (uint64_t(S) * L < 2) return Error{"ranks: a collective needs at least 2 ranks"};

  // Each server's NICs by rail, in host order.
  std::vector<std::vector<std::vector<uint32_t>>> by_rail(servers);
  uint32_t rails = 0;
  for (uint32_t h = 0; h < t.hosts; ++h) rails = std::max(rails, t.rail[h] + 1);
  for (auto& s : by_rail) s.resize(rails);
  for (uint32_t h = 0; h < t.hosts; ++h) by_rail[t.server[h]][t.rail[h]].push_back(h);
  std::vector<uint32_t> striped = c.rails;
  if (c.all_rails)
    for (uint32_t r = 0; r < rails; ++r) striped.push_back(r);

  Placement p;
  std::vector<uint32_t> host_of;
  for (uint32_t k = 0; k < S; ++k)
    for (uint32_t s = c.first_server + k * stride, l = c.first_local; l < c.first_local + L; ++l) {
      host_of.push_back(s);
      p.home.push_back(t.accelerator_nic[s][l]);
      std::vector<uint32_t> nics;
      for (uint32_t r : striped) {
        if (r >= rails || by_rail[s][r].empty())
          return Error{"rails: rail " + std::to_string(r) + ": no NIC of server " + std::to_string(s) + " is on it"};
        nics.insert(nics.end(), by_rail[s][r].begin(), by_rail[s][r].end());
      }
      if (nics.empty()) nics.push_back(p.home.back());
      p.nics.push_back(std::move(nics));
    }
  p.layout = sched::RankLayout::from_hosts(host_of);
  return p;
}

sched::Tuning tuning_for(const CollectiveOptions& c, const Placement& p, const SimTopology& t) {
  // Per host link: what it joins. A host's fabric port goes to a ToR; a ToR's other
  // links are its uplinks.
  double nic_gbps = 0, host_delay_us = 0, intra_gbps = 0, intra_delay_us = 0, up_delay_us = 0;
  std::vector<double> down(t.node_count(), 0), up(t.node_count(), 0);
  for (const SimLink& l : t.links) {
    const bool a_host = t.is_host(l.a), b_host = t.is_host(l.b);
    const NodeIndex host = a_host ? l.a : l.b, other = a_host ? l.b : l.a;
    if (a_host || b_host) {
      if (t.tier[other] == Tier::kIntra) {
        intra_gbps = std::max(intra_gbps, l.rate.gbps()), intra_delay_us = l.delay.us_f();
      } else {
        down[other] += l.rate.gbps();
        if (host == p.nics[0][0]) host_delay_us = l.delay.us_f();
        if (std::count(p.nics[0].begin(), p.nics[0].end(), host)) nic_gbps += l.rate.gbps();
      }
    } else {
      for (NodeIndex s : {l.a, l.b})
        if (t.tier[s] == Tier::kTor) up[s] += l.rate.gbps(), up_delay_us = l.delay.us_f();
    }
  }
  // The spine's share of a NIC: the thinnest ToR's uplinks over its NICs (1: not
  // oversubscribed).
  double spine = 1;
  for (NodeIndex s = t.hosts; s < t.node_count(); ++s)
    if (t.tier[s] == Tier::kTor && down[s] > 0) spine = std::min(spine, up[s] / down[s]);
  auto bytes_per_us = [](double gbps) { return gbps * 1e3 / 8; };
  sched::Tuning tuning;
  tuning.model.shm = {2 * intra_delay_us, bytes_per_us(intra_gbps)};
  tuning.model.rail = {2 * host_delay_us, bytes_per_us(nic_gbps)};
  tuning.model.cross = {2 * (host_delay_us + up_delay_us), bytes_per_us(nic_gbps * spine)};
  if (c.algorithm != sched::Algorithm::kDefault) tuning.forced.forced.push_back({c.op, c.algorithm});
  tuning.chunk_bytes = c.chunk_bytes;
  tuning.links_in_memory = p.layout.hosts() == 1;
  return tuning;
}

}  // namespace xm::sim
