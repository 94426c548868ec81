// The runtime executes the schedules layer's schedules (src/sched/) and decides with its
// tuner; these are the names of that layer it speaks in.
#pragma once

#include "sched/schedule.h"
#include "sched/tuner.h"
#include "sched/types.h"

namespace xm::ccl {

using sched::After;
using sched::after_step;
using sched::Algorithm;
using sched::AlgorithmOverrides;
using sched::Buffer;
using sched::BufferId;
using sched::bus_factor;
using sched::Collective;
using sched::CollectiveArgs;
using sched::copy_step;
using sched::CostModel;
using sched::DataType;
using sched::describe;
using sched::Estimate;
using sched::estimate;
using sched::kDataTypes;
using sched::kNoStep;
using sched::kRedOps;
using sched::kZeroCopyMinBytes;
using sched::LinkCost;
using sched::make_schedule;
using sched::output_count;
using sched::parse_algorithm_overrides;
using sched::pull_send_step;
using sched::RankLayout;
using sched::recv_step;
using sched::RedOp;
using sched::Region;
using sched::Schedule;
using sched::send_step;
using sched::size_of;
using sched::Step;
using sched::StepKind;
using sched::to_string;
using sched::tuned;
using sched::Tuning;

}  // namespace xm::ccl
