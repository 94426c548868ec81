// The pending events of one simulation: a 4-ary min-heap on (time, insertion order).
//
// An event is 16 bytes: when it happens, a sequence number that keeps events at the same
// picosecond in the order they were scheduled (so a run is deterministic and causal
// order is kept), and a 32-bit target that the owner decodes (component kind + index).
// A 4-ary heap halves the depth of a binary one and keeps a node's children in one
// cache line. `replace_top` serves the common step "take the earliest event, schedule
// one new event" with a single sift-down instead of a pop and a push.
//
// Not thread-safe; one queue per simulation (never global).
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/units.h"

namespace xm::sim {

struct Event {
  Time at;
  uint32_t seq = 0;
  uint32_t target = 0;
};

class EventQueue {
 public:
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  const Event& top() const { assert(!heap_.empty()); return heap_[0]; }

  void push(Time at, uint32_t target) {
    heap_.push_back(Event{at, seq_++, target});
    sift_up(heap_.size() - 1);
  }
  // An event that already has its sequence number (from another queue).
  void push(const Event& e) {
    heap_.push_back(e);
    sift_up(heap_.size() - 1);
  }
  void pop() {
    assert(!heap_.empty());
    Event last = heap_.back();
    heap_.pop_back();
    if (!heap_.empty()) sift_down(last);
  }
  // pop() then push(at, target), in one pass.
  void replace_top(Time at, uint32_t target) {
    assert(!heap_.empty());
    sift_down(Event{at, seq_++, target});
  }
  void reserve(size_t n) { heap_.reserve(n); }

 private:
  // Sequence numbers wrap; comparing their difference keeps the order right as long as
  // events at the same picosecond were scheduled fewer than 2^31 events apart.
  static bool before(const Event& a, const Event& b) {
    return a.at < b.at || (a.at == b.at && int32_t(a.seq - b.seq) < 0);
  }
  void sift_up(size_t i) {
    Event e = heap_[i];
    while (i > 0) {
      size_t parent = (i - 1) / 4;
      if (!before(e, heap_[parent])) break;
      heap_[i] = heap_[parent];
      i = parent;
    }
    heap_[i] = e;
  }
  // Places `e` starting from the root's hole.
  void sift_down(Event e) {
    const size_t n = heap_.size();
    size_t i = 0;
    for (;;) {
      size_t first = 4 * i + 1;
      if (first >= n) break;
      size_t best = first;
      size_t end = first + 4 < n ? first + 4 : n;
      for (size_t c = first + 1; c < end; ++c)
        if (before(heap_[c], heap_[best])) best = c;
      if (!before(heap_[best], e)) break;
      heap_[i] = heap_[best];
      i = best;
    }
    heap_[i] = e;
  }

  std::vector<Event> heap_;
  uint32_t seq_ = 0;
};

}  // namespace xm::sim
