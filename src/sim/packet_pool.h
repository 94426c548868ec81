// Storage for every packet of one simulation, handed out as 32-bit ids.
//
// Freed ids are reused last-in first-out, so the hot set of packets stays in cache; the
// store grows (rarely, in doubling steps) only while more packets are in flight than
// ever before. `live()` lets tests check that every packet came back.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/packet.h"

namespace xm::sim {

class PacketPool {
 public:
  PacketId alloc() {
    ++live_;
    if (!free_.empty()) {
      PacketId id = free_.back();
      free_.pop_back();
      return id;
    }
    store_.emplace_back();
    int_.emplace_back();
    return PacketId(store_.size() - 1);
  }
  // Precondition: `id` came from alloc() and was not freed since.
  void free(PacketId id) {
    assert(id < store_.size() && live_ > 0);
    --live_;
    free_.push_back(id);
  }
  Packet& operator[](PacketId id) { return store_[id]; }
  const Packet& operator[](PacketId id) const { return store_[id]; }
  IntStack& int_stack(PacketId id) { return int_[id]; }
  const IntStack& int_stack(PacketId id) const { return int_[id]; }

  uint64_t live() const { return live_; }
  size_t capacity() const { return store_.size(); }
  void reserve(size_t n) {
    store_.reserve(n);
    int_.reserve(n);
    free_.reserve(n);
  }

 private:
  std::vector<Packet> store_;
  std::vector<IntStack> int_;
  std::vector<PacketId> free_;
  uint64_t live_ = 0;
};

}  // namespace xm::sim
