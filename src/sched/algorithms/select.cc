// make_schedule: from a collective and the chosen algorithm to a schedule.
#include "sched/algorithms/algorithms.h"

namespace xm::sched {

const char* to_string(Collective c) {
  static const char* names[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "alltoall"};
  return names[int(c)];
}

const char* to_string(Algorithm a) {
  static const char* names[] = {"default", "ring", "ring-relay", "hierarchical", "recursive-doubling", "pairwise", "pxn", "two-shot", "direct", "tree", "hierarchical-tree"};
  return names[int(a)];
}

Schedule make_schedule(const CollectiveArgs& args) {
  switch (args.collective) {
    case Collective::kAllReduce:
      switch (args.algorithm) {
        case Algorithm::kRing: return ring_allreduce(args);
        case Algorithm::kHierarchical: return hierarchical_allreduce(args);
        case Algorithm::kHierarchicalTree: return hierarchical_tree_allreduce(args);
        case Algorithm::kTree: return tree_allreduce(args);
        case Algorithm::kRecursiveDoubling: return recursive_doubling_allreduce(args);
        case Algorithm::kTwoShot: return args.shared_memory ? two_shot_allreduce(args) : ring_allreduce(args);
        default: return args.relays ? ring_relay_allreduce(args) : ring_allreduce(args);
      }
    case Collective::kBroadcast: return chain_broadcast(args);
    case Collective::kReduce: return chain_reduce(args);
    case Collective::kAllGather:
      switch (args.algorithm) {
        case Algorithm::kHierarchical: return hierarchical_allgather(args);
        case Algorithm::kDirect: return args.shared_memory ? direct_allgather(args) : ring_allgather(args);
        default: return ring_allgather(args);
      }
    case Collective::kReduceScatter:
      switch (args.algorithm) {
        case Algorithm::kHierarchical: return hierarchical_reduce_scatter(args);
        case Algorithm::kDirect: return args.shared_memory ? direct_reduce_scatter(args) : ring_reduce_scatter(args);
        default: return ring_reduce_scatter(args);
      }
    case Collective::kAllToAll: return args.algorithm == Algorithm::kPxn ? pxn_alltoall(args) : pairwise_alltoall(args);
  }
  return {};
}

}  // namespace xm::sched
