// make_schedule: the algorithm each collective uses. One place, so the tuner can take
// over the choice later.
#include "ccl/algorithms/algorithms.h"

namespace xm::ccl {

const char* to_string(Collective c) {
  static const char* names[] = {"all_reduce", "broadcast", "reduce", "all_gather", "reduce_scatter", "alltoall"};
  return names[int(c)];
}

Schedule make_schedule(const CollectiveArgs& args) {
  switch (args.collective) {
    case Collective::kAllReduce: return args.relays ? ring_relay_allreduce(args) : ring_allreduce(args);
    case Collective::kBroadcast: return chain_broadcast(args);
    case Collective::kReduce: return chain_reduce(args);
    case Collective::kAllGather: return ring_allgather(args);
    case Collective::kReduceScatter: return ring_reduce_scatter(args);
    case Collective::kAllToAll: return pairwise_alltoall(args);
  }
  return {};
}

}  // namespace xm::ccl
