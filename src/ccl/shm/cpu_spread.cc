#include "ccl/shm/cpu_spread.h"

#include <algorithm>
#include <string>

#include "ccl/log.h"

namespace xm::ccl {

CpuSpread::CpuSpread(std::vector<std::atomic<int32_t>*> cpus, int self, int rank)
    : cpus_(std::move(cpus)), self_(self), rank_(rank) {
  CPU_ZERO(&allowed_);
  if (::sched_getaffinity(0, sizeof allowed_, &allowed_) != 0) return;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &allowed_)) allowed_list_.push_back(c);
  if (!allowed_list_.empty()) load_.assign(size_t(allowed_list_.back()) + 1, 0);
}

void CpuSpread::waiting() {
  const int here = ::sched_getcpu();
  cpus_[size_t(self_)]->store(here, std::memory_order_relaxed);
  if (allowed_list_.size() < 2 || here < 0 || size_t(here) >= load_.size() || !CPU_ISSET(here, &allowed_)) return;
  std::fill(load_.begin(), load_.end(), 0);
  bool highest_here = true;
  for (size_t r = 0; r < cpus_.size(); ++r) {
    int c = cpus_[r]->load(std::memory_order_relaxed);
    if (c < 0 || size_t(c) >= load_.size()) continue;
    ++load_[size_t(c)];
    if (c == here && int(r) > self_) highest_here = false;
  }
  int target = allowed_list_.front();
  for (int c : allowed_list_)
    if (load_[size_t(c)] < load_[size_t(target)]) target = c;
  const auto now = std::chrono::steady_clock::now();
  if (!highest_here || load_[size_t(here)] <= load_[size_t(target)] + 1) {
    crowded_since_ = {};
    return;
  }
  // Only a crowding that lasts: a peer's word is as old as its last wait, and the
  // scheduler may be moving things itself.
  if (crowded_since_ == std::chrono::steady_clock::time_point{}) crowded_since_ = now;
  if (now - crowded_since_ < kSettle || now < next_move_) return;
  crowded_since_ = {};
  next_move_ = now + kBetweenMoves;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(target, &one);
  if (::sched_setaffinity(0, sizeof one, &one) != 0) return;  // the kernel moves this thread now
  ::sched_setaffinity(0, sizeof allowed_, &allowed_);          // and it keeps its own mask
  cpus_[size_t(self_)]->store(target, std::memory_order_relaxed);
  ++moves_;
  XCCL_LOG(LogLevel::kInfo, Subsys::kShm, rank_,
           "moved from CPU " + std::to_string(here) + " (" + std::to_string(load_[size_t(here)]) +
               " local ranks on it) to CPU " + std::to_string(target) + " (" + std::to_string(load_[size_t(target)]) + ")");
}

}  // namespace xm::ccl
