// A FIFO of trivially copyable values in a power-of-two ring that only ever grows.
//
// Used for every queue in the data path (switch egress queues, link pipes, NIC control
// queues): after warm-up the rings have reached their working size and a packet moving
// through the fabric allocates nothing.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace xm::sim {

template <typename T>
class Ring {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  bool empty() const { return size_ == 0; }
  uint32_t size() const { return size_; }
  const T& front() const { assert(size_ > 0); return buf_[head_]; }
  T& front() { assert(size_ > 0); return buf_[head_]; }

  // The i-th element from the front. Precondition: i < size().
  const T& at(uint32_t i) const { return buf_[(head_ + i) & mask_]; }

  void push_back(const T& v) {
    if (size_ == buf_.size()) grow();
    buf_[(head_ + size_) & mask_] = v;
    ++size_;
  }
  T pop_front() {
    assert(size_ > 0);
    T v = buf_[head_];
    head_ = (head_ + 1) & mask_;
    --size_;
    return v;
  }

 private:
  void grow() {
    std::vector<T> bigger(buf_.empty() ? 8 : buf_.size() * 2);
    for (uint32_t i = 0; i < size_; ++i) bigger[i] = buf_[(head_ + i) & mask_];
    buf_.swap(bigger);
    head_ = 0;
    mask_ = uint32_t(buf_.size() - 1);
  }
  std::vector<T> buf_;
  uint32_t head_ = 0, size_ = 0, mask_ = 0;
};

}  // namespace xm::sim
