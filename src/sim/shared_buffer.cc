#include "sim/shared_buffer.h"

#include <algorithm>
#include <cassert>

namespace xm::sim {

void SharedBuffer::configure(const BufferConfig& config, const std::vector<uint32_t>& headroom,
                             const std::vector<uint32_t>& shift) {
  assert(headroom.size() == shift.size());
  config_ = config;
  cell_.assign(headroom.size() * kClasses, Cell{});
  total_headroom_ = total_reserve_ = 0;
  for (size_t p = 0; p < headroom.size(); ++p) {
    total_headroom_ += uint64_t(headroom[p]) * config.data_classes;
    total_reserve_ += uint64_t(config.reserve_bytes) * config.data_classes;
    for (int c = 0; c < kClasses; ++c) {
      cell_[at(uint32_t(p), c)].headroom_limit = headroom[p];
      cell_[at(uint32_t(p), c)].shift = uint8_t(shift[p]);
    }
  }
}

uint64_t SharedBuffer::pfc_threshold(uint32_t shift) const {
  const uint64_t committed = total_headroom_ + total_reserve_ + shared_used_;
  const uint64_t free = config_.buffer_bytes > committed ? config_.buffer_bytes - committed : 0;
  return free >> shift;
}

SharedBuffer::Admit SharedBuffer::arrive(uint32_t in, uint32_t out, int cls, uint32_t bytes) {
  if (used_ + bytes > config_.buffer_bytes) return Admit::kDrop;
  Cell& egress = cell_[at(out, cls)];
  if (cls == 0) {  // control: always admitted, never paused
    used_ += bytes;
    egress.egress += bytes;
    return Admit::kAdmit;
  }
  Cell& ingress = cell_[at(in, cls)];
  const uint64_t reserve = config_.reserve_bytes;
  if (!config_.pfc) {
    // Lossy: a dynamic threshold on the egress queue.
    const uint64_t queued = egress.egress;
    if (queued + bytes > reserve && queued + bytes > ((config_.buffer_bytes - used_) >> config_.egress_shift))
      return Admit::kDrop;
    used_ += bytes;
    egress.egress += bytes;
    ingress.ingress += bytes;
    return Admit::kAdmit;
  }
  uint64_t threshold = pfc_threshold(ingress.shift);
  const uint64_t shared = ingress.ingress > reserve ? ingress.ingress - reserve : 0;
  if (ingress.headroom + bytes > ingress.headroom_limit && shared + bytes > threshold) return Admit::kDrop;
  used_ += bytes;
  egress.egress += bytes;
  const uint64_t after = ingress.ingress + bytes;
  if (after > reserve && after - reserve > threshold) {
    ingress.headroom += bytes;  // past the threshold: the PAUSE is on its way
  } else {
    if (after > reserve) {
      shared_used_ += std::min<uint64_t>(bytes, after - reserve);
      threshold = pfc_threshold(ingress.shift);
    }
    ingress.ingress = after;
  }
  if (ingress.paused) return Admit::kAdmit;
  const uint64_t shared_now = ingress.ingress > reserve ? ingress.ingress - reserve : 0;
  if (ingress.headroom > 0 || shared_now >= threshold) {
    ingress.paused = true;
    return Admit::kAdmitAndPause;
  }
  return Admit::kAdmit;
}

bool SharedBuffer::depart(uint32_t in, uint32_t out, int cls, uint32_t bytes) {
  Cell& egress = cell_[at(out, cls)];
  assert(used_ >= bytes && egress.egress >= bytes);
  used_ -= bytes;
  egress.egress -= bytes;
  if (cls == 0) return false;
  Cell& ingress = cell_[at(in, cls)];
  const uint64_t reserve = config_.reserve_bytes;
  if (!config_.pfc) {
    ingress.ingress -= bytes;
    return false;
  }
  // Headroom drains first: it is what stands between the queue and a RESUME.
  const uint64_t from_headroom = std::min<uint64_t>(ingress.headroom, bytes);
  ingress.headroom -= from_headroom;
  const uint64_t rest = bytes - from_headroom;
  assert(ingress.ingress >= rest);
  const uint64_t shared_before = ingress.ingress > reserve ? ingress.ingress - reserve : 0;
  ingress.ingress -= rest;
  const uint64_t shared = ingress.ingress > reserve ? ingress.ingress - reserve : 0;
  shared_used_ -= shared_before - shared;
  if (!ingress.paused || ingress.headroom > 0) return false;
  if (shared == 0 || shared + config_.resume_offset_bytes <= pfc_threshold(ingress.shift)) {
    ingress.paused = false;
    return true;
  }
  return false;
}

}  // namespace xm::sim
