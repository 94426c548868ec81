// One schedule generator per algorithm; each file holds one. See schedule.h.
#pragma once

#include "sched/schedule.h"

namespace xm::sched {

Schedule ring_allreduce(const CollectiveArgs& args);
Schedule ring_relay_allreduce(const CollectiveArgs& args);
Schedule hierarchical_allreduce(const CollectiveArgs& args);
Schedule hierarchical_tree_allreduce(const CollectiveArgs& args);
Schedule tree_allreduce(const CollectiveArgs& args);
Schedule recursive_doubling_allreduce(const CollectiveArgs& args);
Schedule two_shot_allreduce(const CollectiveArgs& args);
Schedule ring_allgather(const CollectiveArgs& args);
Schedule hierarchical_allgather(const CollectiveArgs& args);
Schedule direct_allgather(const CollectiveArgs& args);
Schedule ring_reduce_scatter(const CollectiveArgs& args);
Schedule hierarchical_reduce_scatter(const CollectiveArgs& args);
Schedule direct_reduce_scatter(const CollectiveArgs& args);
Schedule chain_broadcast(const CollectiveArgs& args);
Schedule chain_reduce(const CollectiveArgs& args);
Schedule pairwise_alltoall(const CollectiveArgs& args);
Schedule pxn_alltoall(const CollectiveArgs& args);

}  // namespace xm::sched
