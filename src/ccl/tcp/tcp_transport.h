// TCP across hosts, multi-rail: one socket per rail to each peer, rail r to the peer's
// rail r; one byte stream each way, cut into stripes that go to the rails in proportion
// to their speed (a rail whose socket is full gives its turn to one that is not).
// Non-blocking sockets, driven by the executor's progress loop: no thread per connection.
//
// Riding through a failed rail: every stripe is a frame that says where in the stream it
// belongs (frame.h), the receiver places it by offset, and the sender keeps each byte
// until the receiver says it has consumed it (the ack in every frame). When a rail dies
// (a socket error, or silent while another rail is heard: rail_health.h) its unacknowledged
// stripes go out again on the others, the peer is told, and the rail is reconnected in
// the background (TcpConnector), held out of the stripe until it has stayed up a while,
// then used again. Nothing is lost, nothing delivered twice.
#pragma once

#include <atomic>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ccl/link.h"
#include "ccl/net/auth.h"
#include "ccl/net/socket.h"
#include "ccl/tcp/frame.h"
#include "ccl/tcp/rail_advice.h"
#include "ccl/tcp/rail_health.h"
#include "ccl/tcp/rails.h"

namespace xm::ccl {

// A rail's state as users see it (xcclRailState_t mirrors it).
enum class RailState : int {
  kUp = 0,       // in the stripe
  kDown = 1,     // failed; waiting out its pause before reconnecting
  kProbing = 2,  // being reconnected
  kHeld = 3,     // reconnected, carrying only heartbeats until it has stayed up
};
const char* rail_state_name(RailState s);

class TcpLink final : public Link {
 public:
  // window_bytes (a power of two): how far the sender may run ahead of what the receiver
  // consumed; both ends keep that much (the receiver to place stripes, the sender to resend).
  TcpLink(int self, int peer, std::vector<net::Fd> sockets, std::vector<double> weights, std::vector<bool> spares,
          size_t stripe_bytes, size_t window_bytes, RailPolicy policy = {});
  ~TcpLink() override;
  size_t send_some(const std::byte* data, size_t bytes) override;
  std::span<const std::byte> readable() override;
  void consume(size_t bytes) override { consumed_ += bytes; }
  void progress() override;
  Status status() const override;
  void close() override;
  // Ending the link without losing what the peer has not yet got: finish() sends end of
  // stream after what the sockets hold; finished() reads and drops whatever still arrives
  // (a socket closed with unread bytes resets the connection, and a reset throws away
  // what it has not yet delivered) and is true once the peer acknowledged every byte.
  void finish();
  bool finished();

  // Work of its own, even with no step pending: stripes not yet in a socket or not yet
  // acknowledged, stripes to resend, an acknowledgement owed, a rail being reconnected.
  bool busy() const override;
  bool unsent() const override;  // stripes not yet in a socket

  // Failback, driven by TcpConnector: a failed rail whose pause is over wants a new
  // connection (the higher rank dials it, the lower admits it); once proven it is
  // installed here and held before it carries stripes again.
  bool wants_connection(size_t rail, net::Clock::time_point now) const;
  void connecting(size_t rail);
  void install(size_t rail, net::Fd fd);
  bool closed_by_peer() const { return peer_closed_; }
  // Heeds the operators' advice (rail_advice.h), read at every health check; `local` and
  // `remote` are the rails' addresses at each end.
  void heed(std::shared_ptr<RailAdviceFile> advice, std::vector<std::string> local, std::vector<std::string> remote);
  bool advised_against(size_t rail) const { return rails_[rail]->advised; }

  // Readable from any thread (xcclCommGetRailInfo).
  size_t rails() const { return rails_.size(); }
  RailState state(size_t rail) const { return rails_[rail]->now(); }
  uint64_t bytes_sent(size_t rail) const { return rails_[rail]->sent.load(std::memory_order_relaxed); }
  uint64_t bytes_received(size_t rail) const { return rails_[rail]->received.load(std::memory_order_relaxed); }
  uint32_t failures(size_t rail) const { return rails_[rail]->failures.load(std::memory_order_relaxed); }

 private:
  struct OutFrame {
    Frame f;
    size_t pushed = 0;  // header and payload bytes the socket took
    std::byte header[kFrameHeader];
  };
  struct RailIo {
    net::Fd fd;
    std::atomic<int> state{int(RailState::kUp)};
    RailState now() const { return RailState(state.load(std::memory_order_relaxed)); }
    std::atomic<uint64_t> sent{0}, received{0};
    std::atomic<uint32_t> failures{0};
    uint32_t generation = 0;  // connections so far, counted alike at both ends
    double weight = 1, credit = 0;
    bool spare = false;  // carries stripes only while no rail that is not a spare can
    bool advised = false;  // advised against: carries stripes only while no other rail can
    std::deque<OutFrame> queue;  // to push; the first may be under way
    std::deque<Frame> unacked;   // data pushed whole, kept until consumed
    size_t queued_bytes = 0;
    std::byte header[kFrameHeader];
    size_t header_got = 0;
    bool in_data = false, eof = false;
    Frame in;
    uint32_t in_got = 0;
    net::Clock::time_point since{}, retry_at{}, last_heartbeat{}, eof_at{};
    unsigned recent_failures = 0;
    InFlightWatch in_flight;
    std::string why;  // the last failure
  };
  using Clock = net::Clock;

  void fail(const std::string& what);
  bool in_stripe(size_t rail) const;
  bool in_stripe_any() const;
  int pick_rail(int except = -1);
  void enqueue(size_t rail, Frame f, bool urgent = false);
  void push(size_t rail);
  void receive(size_t rail);
  void on_frame(size_t rail, const Frame& f);
  void arrived(uint64_t from, uint64_t to);
  void rail_down(size_t rail, const std::string& why, bool tell_peer);
  void check_health(Clock::time_point now);
  void owe_ack();
  void log_rail(size_t rail, const std::string& what) const;
  void apply_advice();

  int self_, peer_;
  std::vector<std::unique_ptr<RailIo>> rails_;
  size_t stripe_;
  RailPolicy policy_;
  FrameLimits limits_;
  // Sending: stream bytes [released_, taken_) kept in out_ until the peer consumed them.
  size_t window_;
  std::unique_ptr<std::byte[]> out_, in_, scratch_;
  uint64_t taken_ = 0, released_ = 0;
  // Receiving: [consumed_, frontier_) arrived whole; stripes beyond, by start.
  uint64_t consumed_ = 0, frontier_ = 0, ack_sent_ = 0, consumed_at_check_ = 0;
  std::map<uint64_t, uint64_t> beyond_;
  bool ack_owed_ = false;
  Clock::time_point next_check_{};
  Status status_;
  bool peer_closed_ = false;  // every rail ended: the peer left
  std::shared_ptr<RailAdviceFile> advice_;
  std::vector<std::string> local_addresses_, remote_addresses_;
  uint64_t advice_seen_ = 0;
};

struct TcpSetup {
  int rank = 0;
  std::vector<Rail> rails;                      // this rank's, with listening ports
  std::vector<net::Fd>* listeners = nullptr;    // one per rail, taken by the connector
  std::map<int, std::vector<Rail>> peers;       // peers to reach over TCP, and their rails
  net::Secret secret;
  net::Clock::time_point deadline;
  size_t stripe_bytes = kDefaultStripeBytes;
  size_t window_bytes = kDefaultWindowBytes;
  RailPolicy policy;
  std::string rail_advice;  // XCCL_RAIL_ADVICE: the operators' file of rails to avoid; empty: none
};

// Listens on every rail (any free port); fills in the ports.
Result<std::vector<net::Fd>> listen_on_rails(std::vector<Rail>& rails);

}  // namespace xm::ccl
