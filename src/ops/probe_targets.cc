#include "ops/probe_targets.h"

#include <algorithm>

namespace xm::ops {
namespace {

// A host's NIC ports that carry an address, in the plan's order (ascending rail).
std::vector<const Port*> nics(const Device& host) {
  std::vector<const Port*> out;
  for (const Port& p : host.ports)
    if (p.address && p.rail != kNoRail) out.push_back(&p);
  return out;
}

ProbeTarget target(const Port& from, const Device& peer, const Port& to, bool cross_rail) {
  return ProbeTarget{from.name, from.address->base, from.rail, peer.name, to.name, to.address->base, to.rail, cross_rail};
}

}  // namespace

Result<std::vector<ProbeTarget>> probe_targets(const FabricPlan& plan, std::string_view host,
                                               const ProbeMeshOptions& options) {
  const std::vector<const Device*> hosts = plan.of_role(Role::kHost);
  auto me = std::find_if(hosts.begin(), hosts.end(), [&](const Device* d) { return d->name == host; });
  if (me == hosts.end()) return Error{"no host \"" + std::string(host) + "\" in the plan"};
  const std::vector<const Port*> mine = nics(**me);
  if (mine.empty()) return Error{"host " + std::string(host) + " has no addressed NIC in the plan"};
  const size_t n = hosts.size(), self = size_t(me - hosts.begin());

  std::vector<ProbeTarget> out;
  for (const Port* from : mine)
    for (size_t k = 1; k < n; ++k) {  // every other host, starting with the next
      const Device& peer = *hosts[(self + k) % n];
      for (const Port* to : nics(peer))
        if (to->rail == from->rail) out.push_back(target(*from, peer, *to, false));
    }
  // Cross-rail: peer host self + k*n/(m+1) and the NIC k rails over, for k = 1..m, so the
  // hosts' choices together cover every ToR pair's direction and spread over the hosts.
  const uint32_t m = options.cross_rail_peers;
  for (size_t a = 0; a < mine.size() && n > 1; ++a)
    for (uint32_t k = 1; k <= m; ++k) {
      size_t step = std::max<size_t>(1, size_t(k) * n / (m + 1));
      if (step % n == 0) step = 1;
      const Device& peer = *hosts[(self + step) % n];
      const std::vector<const Port*> theirs = nics(peer);
      if (theirs.size() < 2) continue;  // one rail: nothing crosses
      const Port* to = theirs[(a + k) % theirs.size()];
      if (to->rail == mine[a]->rail) to = theirs[(a + k + 1) % theirs.size()];
      out.push_back(target(*mine[a], peer, *to, true));
    }
  return out;
}

}  // namespace xm::ops
