#include "registered_allocator.h"

#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <c10/util/Exception.h>
#include <xccl/xccl.h>

#include <atomic>

namespace xccl_torch {
namespace {

void free_registered(void* p) { xcclMemFree(p); }

class RegisteredAllocator final : public c10::Allocator {
 public:
  RegisteredAllocator(c10::Allocator* fallback, size_t min_bytes) : fallback_(fallback), min_bytes_(min_bytes) {}

  c10::DataPtr allocate(size_t n) const override {
    if (n < min_bytes_.load(std::memory_order_relaxed)) return fallback_->allocate(n);
    void* p = nullptr;
    xcclResult_t r = xcclMemAlloc(&p, n);
    TORCH_CHECK(r == xcclSuccess, "xcclMemAlloc of ", n, " bytes: ", xcclGetLastError());
    return {p, p, &free_registered, c10::Device(c10::DeviceType::CPU)};
  }
  void set_min_bytes(size_t n) { min_bytes_.store(n, std::memory_order_relaxed); }

 private:
  c10::Allocator* fallback_;
  std::atomic<size_t> min_bytes_;
};

}  // namespace

void use_registered_memory(size_t min_bytes) {
  static RegisteredAllocator* allocator = nullptr;  // lives as long as the tensors it made
  if (!allocator) {
    allocator = new RegisteredAllocator(c10::GetCPUAllocator(), min_bytes);
    c10::SetCPUAllocator(allocator, /*priority=*/100);
  }
  allocator->set_min_bytes(min_bytes);
}

}  // namespace xccl_torch
