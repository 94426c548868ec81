// The tuner's choices from cost models (the figures measured at start-up feed these).
#include <gtest/gtest.h>

#include "sched/tuner.h"

namespace xm::sched {
namespace {

CollectiveArgs args(Collective c, int ranks, uint64_t bytes) {
  CollectiveArgs a;
  a.collective = c;
  a.ranks = ranks;
  a.type = DataType::kUint8;
  a.count = bytes;
  return a;
}

// 4 hosts × 2 ranks; shared memory fast, NICs at 50 MB/s (400 Mbit/s).
CostModel testbed(double cross_bytes_per_us) {
  CostModel m;
  m.shm = {5, 3000};
  m.rail = {100, 50};
  m.cross = {150, cross_bytes_per_us};
  return m;
}

// The tuner's first choice on one host of `ranks` ranks, with shared memory as measured
// with 4 ranks on 2 cores; `shared`: every peer in shared memory.
Algorithm best_on_one_host(Collective c, int ranks, uint64_t bytes, bool shared) {
  CostModel m;
  m.shm = {27, 1500};
  CollectiveArgs a = args(c, ranks, bytes);
  a.shared_memory = shared;
  return estimate(a, RankLayout::grid(1, ranks), m, shared).front().algorithm;
}

TEST(Tuner, HierarchicalAllReduceAcrossHostsOfSeveralRanks) {
  RankLayout layout = RankLayout::grid(4, 2);
  std::vector<Estimate> e = estimate(args(Collective::kAllReduce, 8, 16 << 20), layout, testbed(50), false);
  EXPECT_EQ(e.front().algorithm, Algorithm::kHierarchical);
}

TEST(Tuner, HierarchicalAllGatherAndReduceScatterOnlyForHostMajorLayouts) {
  // The flat ring sends n-1 = 7 blocks through a NIC, hierarchical 3 on the own rail.
  RankLayout grid = RankLayout::grid(4, 2);
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter}) {
    EXPECT_EQ(estimate(args(c, 8, 4 << 20), grid, testbed(50), false).front().algorithm, Algorithm::kHierarchical);
    // Ranks not numbered host by host: blocks of one host are not contiguous, so the ring.
    RankLayout interleaved = RankLayout::from_hosts(std::vector<int>{0, 1, 2, 3, 0, 1, 2, 3});
    EXPECT_EQ(estimate(args(c, 8, 4 << 20), interleaved, testbed(50), false).front().algorithm, Algorithm::kRing);
  }
}

TEST(Tuner, RecursiveDoublingForTinyMessagesTwoShotOrRingForLargeOnOneHost) {
  RankLayout layout = RankLayout::grid(1, 8);
  CostModel m;
  m.shm = {10, 3000};
  EXPECT_EQ(estimate(args(Collective::kAllReduce, 8, 1024), layout, m, true).front().algorithm,
            Algorithm::kRecursiveDoubling);
  CollectiveArgs in_memory = args(Collective::kAllReduce, 8, 64 << 20);
  in_memory.shared_memory = true;
  EXPECT_EQ(estimate(in_memory, layout, m, true).front().algorithm, Algorithm::kTwoShot);
  EXPECT_EQ(estimate(args(Collective::kAllReduce, 8, 64 << 20), layout, m, false).front().algorithm,
            Algorithm::kRing);  // peers not all in shared memory
}

TEST(Tuner, TwoShotOnOneHostFromSegmentsSentByDescriptor) {
  auto best = [](int ranks, uint64_t bytes, bool shared) {
    return best_on_one_host(Collective::kAllReduce, ranks, bytes, shared);
  };
  EXPECT_EQ(best(4, 1 << 20, true), Algorithm::kTwoShot);
  EXPECT_EQ(best(4, 256 << 20, true), Algorithm::kTwoShot);
  EXPECT_EQ(best(3, 64 << 10, true), Algorithm::kTwoShot);
  // Segments below the zero-copy size: copied through the FIFOs, no gain over the others.
  EXPECT_NE(best(4, 32 << 10, true), Algorithm::kTwoShot);
  // Two ranks: as many hand-offs as the ring, and it measured no slower.
  EXPECT_EQ(best(2, 1 << 20, true), Algorithm::kTwoShot);
  // Not every peer in shared memory: never.
  EXPECT_NE(best(4, 1 << 20, false), Algorithm::kTwoShot);
}

TEST(Tuner, DirectAllGatherAndReduceScatterOnOneHostFromThreeRanks) {
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter})
    for (uint64_t bytes : {4ull << 10, 1ull << 20, 64ull << 20}) {
      EXPECT_EQ(best_on_one_host(c, 4, bytes, true), Algorithm::kDirect) << bytes;
      EXPECT_EQ(best_on_one_host(c, 3, bytes, true), Algorithm::kDirect) << bytes;
      // Two ranks: the same copies and hand-offs; the ring keeps the tie.
      EXPECT_EQ(best_on_one_host(c, 2, bytes, true), Algorithm::kRing) << bytes;
      // Not every peer in shared memory: never.
      EXPECT_EQ(best_on_one_host(c, 4, bytes, false), Algorithm::kRing) << bytes;
    }
}

TEST(Tuner, PxnWhenTheSpineIsThinPairwiseWhenItIsNot) {
  RankLayout layout = RankLayout::grid(4, 2);
  // Spine at a quarter of a NIC per rank: every cross-rail byte is slow.
  EXPECT_EQ(estimate(args(Collective::kAllToAll, 8, 1 << 20), layout, testbed(12.5), false).front().algorithm,
            Algorithm::kPxn);
  // A spine as fast as shared memory: no reason to take the extra hop.
  EXPECT_EQ(estimate(args(Collective::kAllToAll, 8, 1 << 20), layout, testbed(3000), false).front().algorithm,
            Algorithm::kPairwise);
}

TEST(Tuner, OverridesParseAndRejectNonsense) {
  Result<AlgorithmOverrides> o = parse_algorithm_overrides("all_reduce:hierarchical,alltoall:pxn");
  ASSERT_TRUE(o) << o.error().message;
  EXPECT_EQ(o->for_collective(Collective::kAllReduce), Algorithm::kHierarchical);
  EXPECT_EQ(o->for_collective(Collective::kAllToAll), Algorithm::kPxn);
  EXPECT_EQ(o->for_collective(Collective::kBroadcast), Algorithm::kDefault);
  Result<AlgorithmOverrides> ring = parse_algorithm_overrides("ring");
  ASSERT_TRUE(ring);
  EXPECT_EQ(ring->for_collective(Collective::kAllReduce), Algorithm::kRing);
  EXPECT_FALSE(parse_algorithm_overrides("treeish"));
  EXPECT_FALSE(parse_algorithm_overrides("alltoall:hierarchical"));
  EXPECT_FALSE(parse_algorithm_overrides("broadcast:ring"));
  EXPECT_FALSE(parse_algorithm_overrides("all_gather:pxn"));
  EXPECT_FALSE(parse_algorithm_overrides("all_gather:two-shot"));
  Result<AlgorithmOverrides> two = parse_algorithm_overrides("two-shot");
  ASSERT_TRUE(two);
  EXPECT_EQ(two->for_collective(Collective::kAllReduce), Algorithm::kTwoShot);
  EXPECT_EQ(two->for_collective(Collective::kAllGather), Algorithm::kDefault);
  Result<AlgorithmOverrides> direct = parse_algorithm_overrides("direct");
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->for_collective(Collective::kAllGather), Algorithm::kDirect);
  EXPECT_EQ(direct->for_collective(Collective::kReduceScatter), Algorithm::kDirect);
  EXPECT_EQ(direct->for_collective(Collective::kAllReduce), Algorithm::kDefault);
  EXPECT_FALSE(parse_algorithm_overrides("alltoall:direct"));
  Result<AlgorithmOverrides> h = parse_algorithm_overrides("hierarchical");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->for_collective(Collective::kAllGather), Algorithm::kHierarchical);
  EXPECT_EQ(h->for_collective(Collective::kReduceScatter), Algorithm::kHierarchical);
  Result<AlgorithmOverrides> bad = parse_algorithm_overrides("all_reduce:rong");
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find("unknown algorithm 'rong'"), std::string::npos);
}

TEST(Tuner, TreesWhenManyRanksMakeTheRingLatencyBound) {
  // 64 MiB on 1,024 hosts of 8 ranks, 50 us a step between hosts: the ring's 2(H-1)
  // steps cost 100 ms, the tree's 2 log2(H) 1 ms; recursive doubling sends the whole
  // buffer every round.
  RankLayout big = RankLayout::grid(1024, 8);
  CostModel m;
  m.shm = {5, 300'000};
  m.rail = {50, 50'000};
  m.cross = {60, 50'000};
  EXPECT_EQ(estimate(args(Collective::kAllReduce, 8192, 64 << 20), big, m, false).front().algorithm,
            Algorithm::kHierarchicalTree);
  // 4 hosts: the ring's few steps and fewer bytes win.
  EXPECT_EQ(estimate(args(Collective::kAllReduce, 8, 16 << 20), RankLayout::grid(4, 2), testbed(50), false).front().algorithm,
            Algorithm::kHierarchical);
  // One host: never a tree (every peer is one shared-memory hop away), at any size.
  for (uint64_t bytes = 1024; bytes <= (64u << 20); bytes *= 4)
    for (bool shared : {false, true}) EXPECT_NE(best_on_one_host(Collective::kAllReduce, 4, bytes, shared), Algorithm::kTree);
  // One rank per host: the flat tree.
  EXPECT_EQ(estimate(args(Collective::kAllReduce, 1024, 64 << 20), RankLayout::grid(1024, 1), m, false).front().algorithm,
            Algorithm::kTree);
}

TEST(Tuned, GrainIsAQuarterOfTheShareWithinBoundsAndRelaysKeepAQuarterFifo) {
  RankLayout one_host = RankLayout::grid(1, 4);
  Tuning t;
  t.model.shm = {10, 3000};
  // 64 MiB over 4 ranks: a quarter of the 16 MiB share is past the 512 KiB ceiling.
  CollectiveArgs a = tuned(args(Collective::kAllReduce, 4, 64 << 20), one_host, t);
  EXPECT_EQ(a.chunk_bytes, 512u << 10);
  EXPECT_FALSE(a.relays);
  EXPECT_EQ(a.layout, &one_host);
  // 1 MiB: a quarter of the 256 KiB share.
  EXPECT_EQ(tuned(args(Collective::kAllReduce, 4, 1 << 20), one_host, t).chunk_bytes, 64u << 10);
  // Every link in memory with a 1 MiB FIFO: the relay ring, its grain at most 256 KiB.
  t.links_in_memory = true;
  t.fifo_bytes = 1 << 20;
  t.forced = *parse_algorithm_overrides("ring-relay");
  a = tuned(args(Collective::kAllReduce, 4, 64 << 20), one_host, t);
  EXPECT_TRUE(a.relays && a.shared_memory);
  EXPECT_EQ(a.algorithm, Algorithm::kRingRelay);
  EXPECT_EQ(a.chunk_bytes, 256u << 10);
  // A grain asked for that no quarter FIFO holds: no relays, and the grain as asked.
  t.chunk_bytes = 1 << 20;
  a = tuned(args(Collective::kAllReduce, 4, 64 << 20), one_host, t);
  EXPECT_FALSE(a.relays);
  EXPECT_EQ(a.algorithm, Algorithm::kRing);
  EXPECT_EQ(a.chunk_bytes, 1u << 20);
}

}  // namespace
}  // namespace xm::sched
