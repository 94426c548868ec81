// The c10d::Work an xccl operation returns: wait() blocks and rethrows (c10d::Work's
// own), and getFuture() is completed with the operation's output tensors — DDP reads
// every bucket through it.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <exception>
#include <functional>
#include <vector>

namespace xccl_torch {

class WorkXccl : public c10d::Work {
 public:
  WorkXccl(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs);

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override;
  std::vector<at::Tensor> result() override { return outputs_; }
  bool isCompleted() override;
  bool wait(std::chrono::milliseconds timeout) override;
  // Called once, by the thread that saw the operation end (null: it succeeded).
  void complete(std::exception_ptr error);
  // What to do before anyone waits on or polls this work: issue it, if the
  // communicator held it back (point to point, see Communicator::launch).
  void set_before_wait(std::function<void()> f) { before_wait_ = std::move(f); }

 private:
  void before_wait() {
    if (before_wait_) before_wait_();
  }
  std::function<void()> before_wait_;
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace xccl_torch
