#include "sched/tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>


namespace xm::sched {
namespace {

double steps_time(const LinkCost& c, double steps, double bytes) {
  return steps * c.latency_us + bytes / c.bytes_per_us;
}

}  // namespace

std::vector<Estimate> estimate(const CollectiveArgs& a, const RankLayout& layout, const CostModel& m, bool relays_ok) {
  std::vector<Estimate> out;
  const int n = a.ranks;
  if (n <= 1) return {{Algorithm::kDefault, 0}};
  const int H = layout.hosts(), L = layout.uniform_local_size();
  const double bytes = double(a.count) * double(size_of(a.type));
  // The slowest class a flat algorithm crosses: consecutive ranks on different hosts
  // and different local indices talk across rails.
  const LinkCost& flat = H <= 1 ? m.shm : (L > 1 && m.cross.known()) ? m.cross : m.rail;
  if (!flat.known()) return {{Algorithm::kDefault, 0}};
  switch (a.collective) {
    case Collective::kAllReduce: {
      double ring = steps_time(flat, 2.0 * (n - 1), 2.0 * (n - 1) / n * bytes);
      // Two-shot (every peer in shared memory): the ring's bytes, but two hand-offs where
      // the ring has 2(n-1), each a wait for the next rank to get a core. Offered from
      // segments that go by descriptor (smaller ones are copied through the FIFOs like
      // the ring's, to no gain); listed first, so it also wins the tie at two ranks,
      // where it measured 1.0-1.25x the relay ring (docs/performance.md).
      if (a.shared_memory && bytes / n >= double(kZeroCopyMinBytes))
        out.push_back({Algorithm::kTwoShot, steps_time(flat, 2, 2.0 * (n - 1) / n * bytes)});
      out.push_back({relays_ok ? Algorithm::kRingRelay : Algorithm::kRing, ring});
      // Recursive doubling: whole-buffer rounds that cannot overlap (a round sends what
      // the last one reduced), each a copy out and a reduction in; an odd number of
      // rounds ends in scratch and copies home; extra ranks cost a fold and a hand-back.
      int p2 = 1, rounds = 0;
      while (p2 * 2 <= n) p2 *= 2, ++rounds;
      double rd = steps_time(flat, rounds, 2.0 * rounds * bytes) + (rounds % 2 ? bytes / flat.bytes_per_us : 0);
      if (p2 != n) rd += steps_time(flat, 2, 2 * bytes);
      out.push_back({Algorithm::kRecursiveDoubling, rd});
      // Double binary tree: each half climbs and descends a tree of depth log2(n), slice
      // by slice; a rank sends twice the buffer's worth of halves (as an interior node of
      // one tree, its half up once and down twice; as a leaf of the other, up once), about
      // the ring's bytes in log-depth steps instead of 2(n-1).
      // Offered across hosts only: inside one, every peer is one shared-memory hop away
      // and the relay ring and two-shot, measured there, already pay few steps.
      const double depth = std::ceil(std::log2(double(n)));
      if (H > 1) out.push_back({Algorithm::kTree, steps_time(flat, 2 * depth, 2 * bytes)});
      if (H > 1 && L > 1 && m.shm.known() && m.rail.known()) {
        double local = steps_time(m.shm, 2.0 * (L - 1), 2.0 * (L - 1) / L * bytes);
        double across = steps_time(m.rail, 2.0 * (H - 1), 2.0 * (H - 1) / H * bytes / L);
        double across_tree = steps_time(m.rail, 2 * std::ceil(std::log2(double(H))), 2 * bytes / L);
        out.push_back({Algorithm::kHierarchical, local + across});
        out.push_back({Algorithm::kHierarchicalTree, local + across_tree});
      }
      break;
    }
    case Collective::kAllGather:
    case Collective::kReduceScatter: {
      // `bytes` is one rank's block. A flat ring: n-1 blocks through the slowest hop.
      out.push_back({Algorithm::kRing, steps_time(flat, n - 1, (n - 1) * bytes)});
      // Direct (every peer in shared memory): the same bytes, one hand-off. Listed after
      // the ring, which keeps the tie at two ranks, where both copy alike and measured
      // within 0.9-1.3x of each other (docs/performance.md).
      if (a.shared_memory)
        out.push_back({Algorithm::kDirect, steps_time(flat, 1, (n - 1) * bytes)});
      // Hierarchical: H-1 blocks on the own rail; H rows of L-1 blocks inside the host.
      if (H > 1 && L > 1 && layout.host_major() && m.shm.known() && m.rail.known())
        out.push_back({Algorithm::kHierarchical,
                       steps_time(m.rail, H - 1, (H - 1) * bytes) + steps_time(m.shm, H * (L - 1), H * (L - 1) * bytes)});
      break;
    }
    case Collective::kAllToAll: {
      if (H > 1 && L > 1 && m.shm.known() && m.rail.known()) {
        const LinkCost& cross = m.cross.known() ? m.cross : m.rail;
        // Every exchange overlaps: the NIC carries the rail and cross-rail blocks.
        double nic = (H - 1) * bytes / m.rail.bytes_per_us + double(H - 1) * (L - 1) * bytes / cross.bytes_per_us;
        double pairwise = cross.latency_us + std::max((L - 1) * bytes / m.shm.bytes_per_us, nic);
        out.push_back({Algorithm::kPairwise, pairwise});
        // PXN: everything between hosts on the own rail, a hop through shared memory first.
        double pxn = m.shm.latency_us + m.rail.latency_us +
                     std::max(double(L - 1) * H * bytes / m.shm.bytes_per_us, double(L) * (H - 1) * bytes / m.rail.bytes_per_us);
        out.push_back({Algorithm::kPxn, pxn});
      } else {
        out.push_back({Algorithm::kPairwise, steps_time(flat, 1, (n - 1) * bytes)});
      }
      break;
    }
    default: return {{Algorithm::kDefault, 0}};
  }
  std::stable_sort(out.begin(), out.end(), [](const Estimate& x, const Estimate& y) { return x.us < y.us; });
  return out;
}

Algorithm AlgorithmOverrides::for_collective(Collective c) const {
  for (const auto& [coll, algo] : forced)
    if (coll == c) return algo;
  return Algorithm::kDefault;
}

Result<AlgorithmOverrides> parse_algorithm_overrides(const std::string& text) {
  AlgorithmOverrides o;
  std::stringstream in(text);
  std::string item;
  auto algorithm_named = [](const std::string& name) -> Result<Algorithm> {
    for (int i = 1; i < kAlgorithms; ++i)  // not kDefault
      if (name == to_string(Algorithm(i))) return Algorithm(i);
    return Error{"XCCL_ALGO: unknown algorithm '" + name +
                 "' (ring, ring-relay, hierarchical, hierarchical-tree, tree, recursive-doubling, two-shot, direct, pairwise, pxn)"};
  };
  auto applies = [](Collective c, Algorithm a) {
    if (c == Collective::kAllReduce)
      return a == Algorithm::kRing || a == Algorithm::kRingRelay || a == Algorithm::kHierarchical ||
             a == Algorithm::kRecursiveDoubling || a == Algorithm::kTwoShot || a == Algorithm::kTree ||
             a == Algorithm::kHierarchicalTree;
    if (c == Collective::kAllToAll) return a == Algorithm::kPairwise || a == Algorithm::kPxn;
    if (c == Collective::kAllGather || c == Collective::kReduceScatter)
      return a == Algorithm::kRing || a == Algorithm::kHierarchical || a == Algorithm::kDirect;
    return false;
  };
  const Collective tunable[] = {Collective::kAllReduce, Collective::kAllGather, Collective::kReduceScatter,
                                Collective::kAllToAll};
  while (std::getline(in, item, ',')) {
    if (item.empty()) continue;
    size_t colon = item.find(':');
    Result<Algorithm> algo = algorithm_named(colon == std::string::npos ? item : item.substr(colon + 1));
    if (!algo) return algo.error();
    if (colon == std::string::npos) {
      bool any = false;
      for (Collective c : tunable)
        if (applies(c, *algo)) o.forced.push_back({c, *algo}), any = true;
      if (!any) return Error{"XCCL_ALGO: '" + item + "' applies to no collective"};
      continue;
    }
    std::string coll = item.substr(0, colon);
    auto it = std::find_if(std::begin(tunable), std::end(tunable), [&](Collective c) { return coll == to_string(c); });
    if (it == std::end(tunable)) return Error{"XCCL_ALGO: '" + coll + "': only all_reduce, all_gather, reduce_scatter and alltoall have a choice"};
    if (!applies(*it, *algo)) return Error{"XCCL_ALGO: " + item + ": " + to_string(*algo) + " does not run " + coll};
    o.forced.push_back({*it, *algo});
  }
  return o;
}

std::string describe(const CostModel& m) {
  auto one = [](const char* name, const LinkCost& c) {
    char text[96];
    if (!c.known()) std::snprintf(text, sizeof text, "%s not measured", name);
    else std::snprintf(text, sizeof text, "%s %.1f us + %.3f GB/s", name, c.latency_us, c.bytes_per_us / 1e3);
    return std::string(text);
  };
  return one("shm", m.shm) + ", " + one("rail", m.rail) + ", " + one("cross-rail", m.cross);
}

namespace {

Algorithm choose(const CollectiveArgs& a, const RankLayout& layout, const Tuning& t) {
  Algorithm forced = t.forced.for_collective(a.collective);
  if (forced == Algorithm::kRingRelay && !a.relays) return Algorithm::kRing;  // needs shared memory only
  if (forced != Algorithm::kDefault) return forced;
  return estimate(a, layout, t.model, a.relays).front().algorithm;
}

// The pipelining grain when XCCL_CHUNK_BYTES is not set: at least four slices per
// rank's share (so the ring's steps overlap), between 64 KiB and 512 KiB (measured:
// smaller slices cost more in per-step overhead than they gain in overlap). Two-shot
// with a core per rank goes up to 2 MiB: each slice is a hand-off between ranks running
// side by side, and fewer of them measured 1.12x faster at 16 and 64 MiB (2 ranks);
// ranks that share cores keep 512 KiB, as larger slices measured 0.7-0.8x there (4
// ranks on 2 cores: a rank waiting on a slot hands its core over sooner).
uint64_t chunk_for(const CollectiveArgs& a, bool oversubscribed) {
  uint64_t share = a.count * size_of(a.type) / uint64_t(std::max(1, a.ranks));
  uint64_t most = a.algorithm == Algorithm::kTwoShot && !oversubscribed ? 2 << 20 : 512 << 10;
  uint64_t chunk = std::clamp<uint64_t>(share / 4, 64 << 10, most);
  return chunk & ~uint64_t{4095};
}

}  // namespace

CollectiveArgs tuned(CollectiveArgs a, const RankLayout& layout, const Tuning& t) {
  // Relays need FIFOs that can never all be full at once: a rank's plain sends run at
  // most two slices ahead of its final receives, so the ring holds at most 2 slices per
  // FIFO on average, and a slice of a quarter FIFO leaves every writer room (a ring of
  // relays whose FIFOs were all full would wait on itself).
  const uint64_t relay_chunk_max = t.fifo_bytes / 4;
  a.relays = t.links_in_memory && (t.chunk_bytes == 0 || t.chunk_bytes <= relay_chunk_max);
  a.shared_memory = t.links_in_memory;
  a.layout = &layout;
  a.algorithm = choose(a, layout, t);
  a.chunk_bytes = t.chunk_bytes ? t.chunk_bytes : chunk_for(a, t.oversubscribed);
  if (a.relays && (a.algorithm == Algorithm::kRingRelay || a.algorithm == Algorithm::kDefault))
    a.chunk_bytes = std::min<uint64_t>(a.chunk_bytes, relay_chunk_max);
  return a;
}

}  // namespace xm::sched
