// Where the ranks of a communicator live: which host each is on and its index there.
// Rail-aware algorithms read it (local rank l drives NIC l, on rail l); it is the
// schedules' view of the topology, built once per communicator from the bootstrap.
#pragma once

#include <vector>

namespace xm::sched {

struct RankLayout {
  std::vector<int> host_of;                  // by rank
  std::vector<int> local_of;                 // by rank: index among its host's ranks
  std::vector<std::vector<int>> host_ranks;  // by host: its ranks, in local order

  int hosts() const { return int(host_ranks.size()); }
  // Ranks per host when every host has the same number, else 0.
  int uniform_local_size() const {
    if (host_ranks.empty()) return 0;
    for (const auto& h : host_ranks)
      if (h.size() != host_ranks[0].size()) return 0;
    return int(host_ranks[0].size());
  }
  // The rank with local index `local` on `host`.
  int rank_at(int host, int local) const { return host_ranks[host][local]; }
  // The ranks with local index `local`, one per host in host order: those that share rail
  // `local` when local rank l drives NIC l. Precondition: every host has such a rank.
  std::vector<int> rail_ranks(int local) const {
    std::vector<int> out;
    for (int h = 0; h < hosts(); ++h) out.push_back(rank_at(h, local));
    return out;
  }
  // Every host has L ranks and rank = host × L + local index (how launchers number them).
  bool host_major() const {
    const int L = uniform_local_size();
    for (int r = 0; r < int(host_of.size()); ++r)
      if (L == 0 || r != host_of[r] * L + local_of[r]) return false;
    return L > 0;
  }

  // From the host of every rank (any labels; hosts numbered in order of first rank).
  template <typename Label>
  static RankLayout from_hosts(const std::vector<Label>& labels) {
    RankLayout l;
    std::vector<Label> seen;
    for (int r = 0; r < int(labels.size()); ++r) {
      int h = 0;
      while (h < int(seen.size()) && !(seen[h] == labels[r])) ++h;
      if (h == int(seen.size())) {
        seen.push_back(labels[r]);
        l.host_ranks.emplace_back();
      }
      l.host_of.push_back(h);
      l.local_of.push_back(int(l.host_ranks[h].size()));
      l.host_ranks[h].push_back(r);
    }
    return l;
  }
  // `hosts` hosts of `local` ranks each, rank = host × local + index (tests, simulations).
  static RankLayout grid(int hosts, int local) {
    std::vector<int> labels;
    for (int r = 0; r < hosts * local; ++r) labels.push_back(r / local);
    return from_hosts(labels);
  }
};

}  // namespace xm::sched
