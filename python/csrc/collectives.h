// torch.distributed's operations on an xccl Communicator: tensors checked and, where
// they are not one contiguous block, staged; then the xccl calls. Each returns the Work
// the caller waits on. The ProcessGroup forwards to these one to one.
#pragma once

#include <torch/csrc/distributed/c10d/Types.hpp>

#include <vector>

#include "communicator.h"

namespace xccl_torch {

using Tensors = std::vector<at::Tensor>;
using WorkPtr = c10::intrusive_ptr<c10d::Work>;

WorkPtr allreduce(Communicator& c, Tensors& tensors, const c10d::AllreduceOptions& opts);
WorkPtr allreduce_coalesced(Communicator& c, Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts);
WorkPtr broadcast(Communicator& c, Tensors& tensors, const c10d::BroadcastOptions& opts);
WorkPtr reduce(Communicator& c, Tensors& tensors, const c10d::ReduceOptions& opts);
WorkPtr allgather(Communicator& c, std::vector<Tensors>& outputs, Tensors& inputs);
WorkPtr allgather_coalesced(Communicator& c, std::vector<Tensors>& outputs, Tensors& inputs);
WorkPtr allgather_base(Communicator& c, at::Tensor& output, at::Tensor& input);
WorkPtr gather(Communicator& c, std::vector<Tensors>& outputs, Tensors& inputs, const c10d::GatherOptions& opts);
WorkPtr scatter(Communicator& c, Tensors& outputs, std::vector<Tensors>& inputs, const c10d::ScatterOptions& opts);
WorkPtr reduce_scatter(Communicator& c, Tensors& outputs, std::vector<Tensors>& inputs, const c10d::ReduceScatterOptions& opts);
WorkPtr reduce_scatter_base(Communicator& c, at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts);
WorkPtr alltoall_base(Communicator& c, at::Tensor& output, at::Tensor& input, std::vector<int64_t>& output_splits,
                      std::vector<int64_t>& input_splits);
WorkPtr alltoall(Communicator& c, Tensors& outputs, Tensors& inputs);
WorkPtr send(Communicator& c, Tensors& tensors, int peer, int tag);
WorkPtr recv(Communicator& c, Tensors& tensors, int peer, int tag);
WorkPtr barrier(Communicator& c);

}  // namespace xccl_torch
