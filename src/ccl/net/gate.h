// Admission to listening sockets. Every connection must first send a fixed-size hello (its
// claim: which rank, which rail), then pass the handshake for the purpose that claim names,
// each within its own deadline. The gate runs any number of these at once in the caller's
// thread, so a silent, slow or garbage connection delays no one: a legitimate rank's
// handshake completes while the strangers around it wait for their deadlines. Memory and
// descriptors stay bounded (at most `max_pending` handshakes; a new connection beyond that
// evicts the oldest, which a legitimate rank never is for long). Refusals are counted, and
// logged once per source address.
#pragma once

#include <poll.h>

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
  // (Error; a deadline already past polls once without waiting). Handshakes still under
  // way stay pending for the next call.
  Result<Arrival> admit(Clock::time_point deadline);
  // The caller's own refusal of an admitted arrival (a rank that joined twice): counted and
  // logged like the gate's.
  void refuse(size_t listener, const std::string& from, const std::string& why);
  int refused() const { return refused_; }
  // Appends what admit() would poll on, for a caller that sleeps on more than the gate.
  void poll_fds(std::vector<pollfd>& out) const;
  size_t pending() const { return pending_.size(); }

 private:
  struct Pending;
  void accept_all(size_t listener);
  void expire(Clock::time_point now);  // refuses the handshakes past their deadline
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

// The connecting side, in steps that never block: connect (binding `from` if given), send
// the hello, prove `purpose`. A refused connect (the peer not listening yet) or one the
// other end closes before the proof is decided (a gate full of strangers drops its oldest
// handshake) is tried again after a pause; a failed proof is final.
class Dialer {
 public:
  enum class State { kBusy, kDone, kFailed };
  Dialer(Endpoint to, std::span<const uint8_t> hello, const Secret& secret, std::string purpose, std::string from = "");
  State step();
  // What the next step waits for, to poll on (fd -1 while pausing before a retry).
  pollfd waits_for() const;
  Fd take() { return std::move(fd_); }  // once kDone: the proven connection, non-blocking
  // Why it failed (kFailed), or the last reason it had to try again.
  const std::string& error() const { return error_; }

 private:
  State retry(std::string why);
  Endpoint to_;
  std::vector<uint8_t> hello_;
  Secret secret_;
  std::string purpose_, from_;
  Fd fd_;
  bool connected_ = false;
  size_t hello_sent_ = 0;
  std::optional<Handshake> handshake_;
  Clock::time_point resume_at_{};
  std::chrono::milliseconds pause_{10};
  std::string error_;
  State state_ = State::kBusy;
};

// A Dialer run to the end: the proven connection, or an Error at the deadline.
Result<Fd> dial(const Endpoint& to, std::span<const uint8_t> hello, const Secret& secret, const std::string& purpose,
                Clock::time_point deadline, const std::string& from = "");

}  // namespace xm::ccl::net
