// Admission to listening sockets. Every connection must first send a fixed-size hello (its
// claim: which rank, which rail), then pass the handshake for the purpose that claim names,
// each within its own deadline. The gate runs any number of these at once in the caller's
// thread, so a silent, slow or garbage connection delays no one: a legitimate rank's
// handshake completes while the strangers around it wait for their deadlines. Memory and
// descriptors stay bounded (at most `max_pending` handshakes; a new connection beyond that
// evicts the oldest, which a legitimate rank never is for long). Refusals are counted, and
// logged once per source address.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ccl/net/auth.h"
#include "ccl/net/socket.h"
#include "util/result.h"

namespace xm::ccl::net {

class Gate {
 public:
  struct Rules {
    size_t hello_bytes = 0;
    // The purpose the claim must be proven for, or an Error that refuses it at once.
    std::function<Result<std::string>(size_t listener, std::span<const uint8_t> hello)> purpose;
    std::chrono::milliseconds handshake_timeout{5000};
    size_t max_pending = 64;  // handshakes at once; one more drops the oldest
    // Told the first refusal from each source address (later ones are only counted).
    std::function<void(size_t listener, const std::string& from, const std::string& why)> warn;
  };
  // A connection that proved its claim.
  struct Arrival {
    size_t listener = 0;  // index into the listeners the gate watches
    std::string from;     // host:port
    std::vector<uint8_t> hello;
    Fd fd;                // non-blocking
  };

  // Watches `listeners` (not owned; made non-blocking) for connections to admit.
  Gate(std::vector<int> listeners, const Secret& secret, Rules rules);
  ~Gate();
  Gate(const Gate&) = delete;
  Gate& operator=(const Gate&) = delete;

  // Runs every pending handshake until one connection is admitted, or the deadline passes
  // (Error). Handshakes still under way stay pending for the next call.
  Result<Arrival> admit(Clock::time_point deadline);
  // The caller's own refusal of an admitted arrival (a rank that joined twice): counted and
  // logged like the gate's.
  void refuse(size_t listener, const std::string& from, const std::string& why);
  int refused() const { return refused_; }
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending;
  void accept_all(size_t listener);
  // Moves one connection's handshake on; false once it is admitted (into ready_) or refused.
  bool step(Pending& p);

  std::vector<int> listeners_;
  Secret secret_;
  Rules rules_;
  std::deque<std::unique_ptr<Pending>> pending_;  // oldest first
  std::deque<Arrival> ready_;
  std::map<std::string, int> refusals_by_source_;  // host -> count, bounded
  int refused_ = 0;
};

// The connecting side: connects (binding `from` if given), sends the hello, proves
// `purpose`. When the other end closes before the proof is decided — a gate full of
// strangers drops its oldest handshake — it tries again until the deadline; a failed proof
// is final.
Result<Fd> dial(const Endpoint& to, std::span<const uint8_t> hello, const Secret& secret, const std::string& purpose,
                Clock::time_point deadline, const std::string& from = "");

}  // namespace xm::ccl::net
