#include "process_group.h"

#include <Python.h>
#include <c10/util/Exception.h>

#include "collectives.h"

namespace xccl_torch {

ProcessGroupXccl::ProcessGroupXccl(const c10::intrusive_ptr<c10d::Store>& store, int rank, int size, std::string name)
    : c10d::ProcessGroup(rank, size), name_(std::move(name)), comm_(std::make_unique<Communicator>(store, rank, size)) {}

ProcessGroupXccl::~ProcessGroupXccl() {
  // PyTorch 1.13 drops the last reference with the GIL held; the operations still
  // draining may complete futures whose callbacks need it.
  if (Py_IsInitialized() && PyGILState_Check()) {
    PyThreadState* saved = PyEval_SaveThread();
    comm_.reset();
    PyEval_RestoreThread(saved);
  }
}

void ProcessGroupXccl::startCoalescing() { comm_->start_coalescing(); }
void ProcessGroupXccl::endCoalescing(std::vector<c10::intrusive_ptr<c10d::Work>>&) { comm_->end_coalescing(); }

c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::broadcast(std::vector<at::Tensor>& t, const c10d::BroadcastOptions& o) {
  return xccl_torch::broadcast(*comm_, t, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::allreduce(std::vector<at::Tensor>& t, const c10d::AllreduceOptions& o) {
  return xccl_torch::allreduce(*comm_, t, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::allreduce_coalesced(std::vector<at::Tensor>& t,
                                                                     const c10d::AllreduceCoalescedOptions& o) {
  return xccl_torch::allreduce_coalesced(*comm_, t, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::reduce(std::vector<at::Tensor>& t, const c10d::ReduceOptions& o) {
  return xccl_torch::reduce(*comm_, t, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::allgather(std::vector<std::vector<at::Tensor>>& out,
                                                           std::vector<at::Tensor>& in, const c10d::AllgatherOptions&) {
  return xccl_torch::allgather(*comm_, out, in);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::_allgather_base(at::Tensor& out, at::Tensor& in,
                                                                 const c10d::AllgatherOptions&) {
  return xccl_torch::allgather_base(*comm_, out, in);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::allgather_coalesced(std::vector<std::vector<at::Tensor>>& out,
                                                                     std::vector<at::Tensor>& in,
                                                                     const c10d::AllgatherOptions&) {
  return xccl_torch::allgather_coalesced(*comm_, out, in);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::gather(std::vector<std::vector<at::Tensor>>& out,
                                                        std::vector<at::Tensor>& in, const c10d::GatherOptions& o) {
  return xccl_torch::gather(*comm_, out, in, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::scatter(std::vector<at::Tensor>& out,
                                                         std::vector<std::vector<at::Tensor>>& in,
                                                         const c10d::ScatterOptions& o) {
  return xccl_torch::scatter(*comm_, out, in, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::reduce_scatter(std::vector<at::Tensor>& out,
                                                                std::vector<std::vector<at::Tensor>>& in,
                                                                const c10d::ReduceScatterOptions& o) {
  return xccl_torch::reduce_scatter(*comm_, out, in, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::_reduce_scatter_base(at::Tensor& out, at::Tensor& in,
                                                                      const c10d::ReduceScatterOptions& o) {
  return xccl_torch::reduce_scatter_base(*comm_, out, in, o);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::alltoall_base(at::Tensor& out, at::Tensor& in, std::vector<int64_t>& os,
                                                               std::vector<int64_t>& is, const c10d::AllToAllOptions&) {
  return xccl_torch::alltoall_base(*comm_, out, in, os, is);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::alltoall(std::vector<at::Tensor>& out, std::vector<at::Tensor>& in,
                                                          const c10d::AllToAllOptions&) {
  return xccl_torch::alltoall(*comm_, out, in);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::send(std::vector<at::Tensor>& t, int dst, int tag) {
  return xccl_torch::send(*comm_, t, dst, tag);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::recv(std::vector<at::Tensor>& t, int src, int tag) {
  return xccl_torch::recv(*comm_, t, src, tag);
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::recvAnysource(std::vector<at::Tensor>&, int) {
  TORCH_CHECK(false, "xccl recv: a receive from any source is not supported (xccl matches each receive to a named peer)");
}
c10::intrusive_ptr<c10d::Work> ProcessGroupXccl::barrier(const c10d::BarrierOptions&) { return xccl_torch::barrier(*comm_); }

}  // namespace xccl_torch
