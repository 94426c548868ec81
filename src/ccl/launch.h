// One collective, described by CollectiveArgs, through the public C API: for programs
// and tests that sweep over collectives (xccl-perf, the process tests).
#pragma once

#include <xccl/xccl.h>

#include "ccl/schedules.h"

namespace xm::ccl {

inline xcclResult_t launch_collective(const CollectiveArgs& a, const void* in, void* out, xcclComm_t comm) {
  auto t = xcclDataType_t(a.type);
  auto op = xcclRedOp_t(a.op);
  switch (a.collective) {
    case Collective::kAllReduce: return xcclAllReduce(in, out, a.count, t, op, comm);
    case Collective::kBroadcast: return xcclBroadcast(in, out, a.count, t, a.root, comm);
    case Collective::kReduce: return xcclReduce(in, out, a.count, t, op, a.root, comm);
    case Collective::kAllGather: return xcclAllGather(in, out, a.count, t, comm);
    case Collective::kReduceScatter: return xcclReduceScatter(in, out, a.count, t, op, comm);
    case Collective::kAllToAll: return xcclAllToAll(in, out, a.count, t, comm);
  }
  return xcclInvalidArgument;
}

}  // namespace xm::ccl
