// The pending events of one simulation: a calendar queue (timing wheel) for the near
// future in front of a 4-ary heap for the rest.
//
// Packet-level simulation schedules almost every event a few nanoseconds to a few
// microseconds ahead (a packet's serialisation, a link's delay). The wheel has 2^12
// buckets of 512 ps, a 2.1 us horizon: such events go into their bucket in O(1). Buckets
// are one flat array of 7 events and a count each (spilling into a side list when fuller), 512 KiB
// that the clock sweeps in order (a larger wheel loses more to cache misses than it
// saves in heap operations); a bucket is sorted by (time, insertion order) only when
// the clock reaches it — a handful of events. A bitmap of non-empty buckets skips idle
// stretches. Events beyond the horizon (timers, flow arrivals) wait in the heap and move
// into the wheel as the clock approaches them. The order of events is exactly the
// heap's — by time, then by when they were scheduled — so either gives the same run.
//
// Not thread-safe; one queue per simulation.
#pragma once

#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/event_queue.h"

namespace xm::sim {

class CalendarQueue {
 public:
  CalendarQueue() : bucket_(kBuckets), spill_(kBuckets), nonempty_(kBuckets / 64, 0) {}

  bool empty() const { return size_ == 0; }
  size_t size() const { return size_; }

  void push(Time at, uint32_t target) {
    const Event e{at, seq_++, target};
    ++size_;
    const uint64_t slot = slot_of(at);
    // Fast path, kept small so it inlines: a later bucket with room.
    if (slot != cursor_ && slot < cursor_ + kBuckets) {
      Bucket& bucket = bucket_[index(slot)];
      if (bucket.count < kCap) {
        bucket.event[bucket.count++] = e;
        nonempty_[index(slot) / 64] |= uint64_t(1) << (index(slot) % 64);
        return;
      }
    }
    push_slow(e, slot);
  }

  // The earliest event. Precondition: !empty().
  const Event& top() {
    if (head_ == end_) settle();
    return open_events_[head_];
  }
  void pop() {
    if (head_ == end_) settle();
    ++head_;
    --size_;
  }

 private:
  static constexpr int kShift = 9;  // 512 ps per bucket
  static constexpr uint64_t kBuckets = 1 << 12;
  static constexpr uint32_t kCap = 7;  // with the count: 128 bytes, two cache lines
  static uint64_t slot_of(Time t) { return uint64_t(t.ps()) >> kShift; }
  static size_t index(uint64_t slot) { return size_t(slot & (kBuckets - 1)); }
  static bool before(const Event& a, const Event& b) {
    return a.at < b.at || (a.at == b.at && int32_t(a.seq - b.seq) < 0);
  }

  [[gnu::noinline]] void push_slow(const Event& e, uint64_t slot) {
    if (slot >= cursor_ + kBuckets) overflow_.push(e);
    else place(e, slot);
  }

  void place(const Event& e, uint64_t slot) {
    if (slot == cursor_ && open_) {
      // The bucket being consumed: keep its unconsumed part sorted (usually appends).
      if (open_events_ != current_.data()) {  // still in the bucket itself: move it out
        current_.assign(open_events_ + head_, open_events_ + end_);
        bucket_[index(cursor_)].count = 0;
        open_events_ = current_.data();
        end_ -= head_;
        head_ = 0;
      }
      size_t i = current_.size();
      current_.push_back(e);
      while (i > head_ && before(e, current_[i - 1])) current_[i] = current_[i - 1], --i;
      current_[i] = e;
      open_events_ = current_.data();
      ++end_;
      return;
    }
    const size_t b = index(slot);
    Bucket& bucket = bucket_[b];
    if (bucket.count < kCap) bucket.event[bucket.count++] = e;
    else spill_[b].push_back(e);
    nonempty_[b / 64] |= uint64_t(1) << (b % 64);
  }

  // Opens the next non-empty bucket (precondition: events remain): the one after the
  // bucket just consumed, or the current one if none was opened yet. A bucket without
  // spill is sorted where it lies and consumed in place.
  [[gnu::noinline]] void settle() {
    assert(size_ > 0);
    if (open_ && open_events_ != current_.data()) bucket_[index(cursor_)].count = 0;
    current_.clear();
    uint64_t next = next_nonempty(open_ ? cursor_ + 1 : cursor_);
    open_ = false;
    if (next == UINT64_MAX) {
      assert(!overflow_.empty());
      next = slot_of(overflow_.top().at);  // the wheel is empty: jump
    }
    cursor_ = next;
    move_in();
    const size_t b = index(cursor_);
    Bucket& bucket = bucket_[b];
    assert(bucket.count > 0);
    nonempty_[b / 64] &= ~(uint64_t(1) << (b % 64));
    Event* events = bucket.event;
    size_t n = bucket.count;
    if (!spill_[b].empty()) {
      current_.assign(bucket.event, bucket.event + bucket.count);
      current_.insert(current_.end(), spill_[b].begin(), spill_[b].end());
      spill_[b].clear();
      bucket.count = 0;
      events = current_.data();
      n = current_.size();
    }
    for (size_t i = 1; i < n; ++i) {  // insertion sort: a handful of events
      const Event e = events[i];
      size_t j = i;
      while (j > 0 && before(e, events[j - 1])) events[j] = events[j - 1], --j;
      events[j] = e;
    }
    open_events_ = events;
    head_ = 0;
    end_ = n;
    open_ = true;
  }

  // The first slot at or after `from` whose bucket holds events, within the horizon.
  uint64_t next_nonempty(uint64_t from) const {
    const size_t start = index(from);
    size_t word = start / 64;
    uint64_t bits = nonempty_[word] & (~uint64_t(0) << (start % 64));
    for (size_t scanned = 0; scanned <= kBuckets / 64; ++scanned) {
      if (bits) {
        const size_t i = word * 64 + size_t(std::countr_zero(bits));
        return from + ((i - start) & (kBuckets - 1));
      }
      word = (word + 1) % (kBuckets / 64);
      bits = nonempty_[word];
    }
    return UINT64_MAX;
  }

  // Heap events now within the horizon go into the wheel (with their sequence numbers,
  // so ties still break by scheduling order).
  void move_in() {
    while (!overflow_.empty() && slot_of(overflow_.top().at) < cursor_ + kBuckets) {
      const Event e = overflow_.top();
      overflow_.pop();
      place(e, slot_of(e.at));
    }
  }

  struct alignas(64) Bucket {
    uint32_t count = 0;
    Event event[kCap];
  };
  std::vector<Bucket> bucket_;
  std::vector<std::vector<Event>> spill_; // the rest, rarely used
  std::vector<uint64_t> nonempty_;
  std::vector<Event> current_;            // the open bucket when it spilled or grew while open
  Event* open_events_ = nullptr;          // the open bucket's sorted events: in place or current_
  size_t head_ = 0, end_ = 0;             // next and end of open_events_
  uint64_t cursor_ = 0;                   // slot of the open bucket
  bool open_ = false;
  EventQueue overflow_;
  size_t size_ = 0;
  uint32_t seq_ = 0;
};

}  // namespace xm::sim
