// When is a rail dead? Not when it is merely quiet: a peer that is CPU-starved stops
// reading every rail at once, and its kernel still acknowledges what arrives (then
// closes the window), so no rail goes unacknowledged with data in flight. A rail is
// declared dead when its TCP connection has had data in flight without any
// acknowledgement for `stall` while another rail to the same peer was acknowledged
// within the last stall/2: the peer's host is there, this path to it is not.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <vector>

#include "util/result.h"

namespace xm::ccl {

// What the kernel knows about one rail's TCP connection (TCP_INFO).
struct RailSample {
  bool connected = false;    // has a socket that is in use (up or held)
  bool in_flight = false;    // segments sent and not yet acknowledged, or unable to leave
  uint32_t ms_since_ack = 0;  // since the last acknowledgement arrived
};

Result<RailSample> sample_rail(int fd);

// TCP_INFO's time since the last acknowledgement also counts time with nothing to
// acknowledge: a rail idle for seconds that has just sent looks unacknowledged for
// seconds until its first acknowledgement returns (a peer resuming after a pause did
// exactly that). One per rail, fed every sample: it bounds that time by how long this
// side has seen data in flight without a break.
class InFlightWatch {
 public:
  void observe(RailSample& s, std::chrono::steady_clock::time_point now);
  void reset() { watching_ = false; }

 private:
  bool watching_ = false;
  std::chrono::steady_clock::time_point since_{};
};

// Rails to declare dead under the rule above.
std::vector<size_t> silent_rails(std::span<const RailSample> rails, std::chrono::milliseconds stall);
// True while some rail is half-way to the rule: time to make the other rails prove the
// peer is there (a heartbeat makes their TCP acknowledge).
bool suspect_a_rail(std::span<const RailSample> rails, std::chrono::milliseconds stall);

}  // namespace xm::ccl
