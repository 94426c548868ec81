// The discrete-event engine: a clock in picoseconds and the pending events.
//
// Components schedule events with a 32-bit target that their owner decodes; the owner
// runs the engine with a dispatch function. Events wait in a calendar queue
// (calendar_queue.h).
//
// Not thread-safe. Deterministic: the same schedule calls in the same order give the
// same dispatch order.
#pragma once

#include <cassert>
#include <cstddef>
#include <cstdint>

#include "sim/calendar_queue.h"
#include "sim/units.h"

namespace xm::sim {

class Engine {
 public:
  Time now() const { return now_; }
  uint64_t events() const { return events_; }
  size_t pending() const { return queue_.size(); }

  // Precondition: at >= now().
  void schedule(Time at, uint32_t target) {
    assert(at >= now_);
    queue_.push(at, target);
  }

  enum class Stopped { kSlice, kTimeLimit, kDone };

  // Handles events in order. Returns kSlice after `max_events` events, kTimeLimit when
  // the next event is after `stop`, kDone when no event is left or a handler called
  // request_stop().
  template <typename Dispatch>
  Stopped run(Time stop, uint64_t max_events, Dispatch&& dispatch) {
    stop_requested_ = false;
    for (uint64_t n = 0; n < max_events; ++n) {
      if (queue_.empty() || stop_requested_) return Stopped::kDone;
      const Event e = queue_.top();
      if (e.at > stop) return Stopped::kTimeLimit;
      now_ = e.at;
      queue_.pop();
      dispatch(e.target);
      ++events_;
    }
    return stop_requested_ || queue_.empty() ? Stopped::kDone : Stopped::kSlice;
  }

  // Makes run() return false before the next event (e.g. when every flow is done).
  void request_stop() { stop_requested_ = true; }

  // Moves the clock forward with no event (e.g. to the end of a measurement window).
  void advance_to(Time t) {
    assert(t >= now_);
    now_ = t;
  }

 private:
  CalendarQueue queue_;
  Time now_;
  uint64_t events_ = 0;
  bool stop_requested_ = false;
};

}  // namespace xm::sim
