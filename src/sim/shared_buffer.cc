#include "sim/shared_buffer.h"

#include <algorithm>
#include <cassert>

namespace xm::sim {

void SharedBuffer::configure(const BufferConfig& config, const std::vector<uint32_t>& headroom,
                             const std::vector<uint32_t>& shift) {
  assert(headroom.size() == shift.size());
  config_ = config;
  headroom_ = headroom;
  shift_ = shift;
  const size_t n = headroom.size() * kClasses;
  cell_.assign(n, Cell{});
  total_headroom_ = total_reserve_ = 0;
  for (uint32_t h : headroom) {
    total_headroom_ += uint64_t(h) * config.data_classes;
    total_reserve_ += uint64_t(config.reserve_bytes) * config.data_classes;
  }
}

uint64_t SharedBuffer::shared_of(uint32_t in, int cls) const {
  uint64_t bytes = cell_[at(in, cls)].ingress;
  return bytes > config_.reserve_bytes ? bytes - config_.reserve_bytes : 0;
}

uint64_t SharedBuffer::pfc_threshold(uint32_t in) const {
  const uint64_t committed = total_headroom_ + total_reserve_ + shared_used_;
  const uint64_t free = config_.buffer_bytes > committed ? config_.buffer_bytes - committed : 0;
  return free >> shift_[in];
}

bool SharedBuffer::admit(uint32_t in, uint32_t out, int cls, uint32_t bytes) const {
  if (used_ + bytes > config_.buffer_bytes) return false;
  if (cls == 0) return true;
  if (config_.pfc) {
    const bool headroom_full = cell_[at(in, cls)].headroom + bytes > headroom_[in];
    const bool over_threshold = shared_of(in, cls) + bytes > pfc_threshold(in);
    return !(headroom_full && over_threshold);
  }
  const uint64_t queued = cell_[at(out, cls)].egress;
  if (queued + bytes <= config_.reserve_bytes) return true;
  const uint64_t free = config_.buffer_bytes - used_;
  return queued + bytes <= (free >> config_.egress_shift);
}

void SharedBuffer::enqueue(uint32_t in, uint32_t out, int cls, uint32_t bytes) {
  used_ += bytes;
  cell_[at(out, cls)].egress += bytes;
  if (cls == 0) return;
  uint64_t& ingress = cell_[at(in, cls)].ingress;
  const uint64_t after = ingress + bytes;
  if (config_.pfc && after > config_.reserve_bytes &&
      after - config_.reserve_bytes > pfc_threshold(in)) {
    cell_[at(in, cls)].headroom += bytes;  // past the threshold: the PAUSE is on its way
    return;
  }
  if (after > config_.reserve_bytes)
    shared_used_ += std::min<uint64_t>(bytes, after - config_.reserve_bytes);
  ingress = after;
}

void SharedBuffer::dequeue(uint32_t in, uint32_t out, int cls, uint32_t bytes) {
  assert(used_ >= bytes && cell_[at(out, cls)].egress >= bytes);
  used_ -= bytes;
  cell_[at(out, cls)].egress -= bytes;
  if (cls == 0) return;
  // Headroom drains first: it is what stands between the queue and a RESUME.
  uint64_t& headroom = cell_[at(in, cls)].headroom;
  const uint64_t from_headroom = std::min<uint64_t>(headroom, bytes);
  headroom -= from_headroom;
  const uint64_t rest = bytes - from_headroom;
  uint64_t& ingress = cell_[at(in, cls)].ingress;
  assert(ingress >= rest);
  const uint64_t shared_before = ingress > config_.reserve_bytes ? ingress - config_.reserve_bytes : 0;
  ingress -= rest;
  const uint64_t shared_after = ingress > config_.reserve_bytes ? ingress - config_.reserve_bytes : 0;
  shared_used_ -= shared_before - shared_after;
}

bool SharedBuffer::should_pause(uint32_t in, int cls) const {
  if (!config_.pfc || cls == 0 || cell_[at(in, cls)].paused) return false;
  return cell_[at(in, cls)].headroom > 0 || shared_of(in, cls) >= pfc_threshold(in);
}

bool SharedBuffer::should_resume(uint32_t in, int cls) const {
  if (!cell_[at(in, cls)].paused || cell_[at(in, cls)].headroom > 0) return false;
  const uint64_t shared = shared_of(in, cls);
  return shared == 0 || shared + config_.resume_offset_bytes <= pfc_threshold(in);
}

}  // namespace xm::sim
