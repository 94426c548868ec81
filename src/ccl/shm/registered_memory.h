// Registered memory (xcclMemAlloc): buffers that every rank on the host can map. When a
// shared-memory send's bytes lie in such a buffer, the link passes a descriptor instead
// of copying, and the receiver reduces or copies straight out of the sender's buffer:
// one copy fewer each way (the role of NCCL's user-buffer registration).
//
// Thread-safe. Each allocation is a named shared-memory object ("/xccl-mem-<id>") that
// lives until registered_free (or process exit); peers map it by id on first use. The
// id's high 32 bits are the owner's pid, so what a killed process left behind can be
// told from what a live one uses: the first allocation of a process removes the
// objects of this user whose owner is gone (processes that share /dev/shm must share
// the pid namespace too, as ranks on one host do).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>

#include "util/result.h"

namespace xm::ccl {

Result<void*> registered_alloc(size_t bytes);
// Removes this user's /dev/shm/xccl-mem-* whose owning process is gone; returns how
// many. registered_alloc runs it once per process.
int remove_stale_registered_memory();
Status registered_free(void* ptr);

struct RegisteredSpan {
  uint64_t id = 0;
  uint64_t offset = 0;  // of the span within the allocation
};
// Where [p, p + bytes) lies, if wholly inside one registered allocation of this process.
std::optional<RegisteredSpan> registered_lookup(const void* p, size_t bytes);

// Registered scratch for schedules whose peers read it in place: grown by doubling
// (peers keep what they mapped of a smaller one until they go) and reused.
class RegisteredScratch {
 public:
  RegisteredScratch() = default;
  RegisteredScratch(const RegisteredScratch&) = delete;
  RegisteredScratch& operator=(const RegisteredScratch&) = delete;
  ~RegisteredScratch();
  // At least `bytes` (at least one byte), the same memory while no more is asked for.
  Result<std::byte*> reserve(size_t bytes);

 private:
  void* base_ = nullptr;
  size_t size_ = 0;
};

// A peer's registered allocations, mapped on first use and kept until destruction.
class PeerMemory {
 public:
  PeerMemory() = default;
  PeerMemory(const PeerMemory&) = delete;
  PeerMemory& operator=(const PeerMemory&) = delete;
  ~PeerMemory();
  // [offset, offset + bytes) of allocation `id`, mapped; Error if it does not exist or is too small.
  Result<const std::byte*> map(uint64_t id, uint64_t offset, uint64_t bytes);

 private:
  struct Mapping {
    const std::byte* base;
    size_t size;
  };
  std::map<uint64_t, Mapping> mappings_;
};

}  // namespace xm::ccl
