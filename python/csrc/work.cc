#include "work.h"

#include <ATen/core/ivalue.h>

namespace xccl_torch {

WorkXccl::WorkXccl(int rank, c10d::OpType type, const char* title, std::vector<at::Tensor> outputs)
    : c10d::Work(rank, type, title),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(c10::ListType::create(c10::TensorType::get()))) {}

c10::intrusive_ptr<c10::ivalue::Future> WorkXccl::getFuture() {
  before_wait();
  return future_;
}

bool WorkXccl::isCompleted() {
  before_wait();
  return c10d::Work::isCompleted();
}

bool WorkXccl::wait(std::chrono::milliseconds timeout) {
  before_wait();
  return c10d::Work::wait(timeout);
}

void WorkXccl::complete(std::exception_ptr error) {
  // The future first: DDP's reducer and Python hooks wait on it, and its callbacks run
  // here. A Python hook reads fut.value()[0], so the value is the list of outputs.
  if (error)
    future_->setError(error);
  else
    future_->markCompleted(c10::IValue(outputs_));
  finish(error);
}

}  // namespace xccl_torch
