#include "ccl/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "ccl/log.h"
#include "ccl/tcp/rail_health.h"

namespace xm::ccl {
namespace {

constexpr size_t kScratch = 64 << 10;  // where stripes that arrived twice are read and dropped
constexpr auto kHealthEvery = std::chrono::milliseconds(50);
constexpr auto kHeartbeatEvery = std::chrono::milliseconds(100);
constexpr auto kLongestPause = std::chrono::milliseconds(8000);
constexpr auto kForgiveAfter = std::chrono::seconds(30);  // up this long: earlier failures are forgotten

size_t payload(const Frame& f) { return f.kind == FrameKind::kData ? f.len : 0; }

std::chrono::milliseconds doubled(std::chrono::milliseconds base, unsigned times, std::chrono::milliseconds most) {
  for (unsigned i = 1; i < times && base < most; ++i) base *= 2;
  return std::min(base, most);
}

bool transient(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == EINTR; }

}  // namespace

const char* rail_state_name(RailState s) {
  switch (s) {
    case RailState::kUp: return "up";
    case RailState::kDown: return "down";
    case RailState::kProbing: return "probing";
    case RailState::kHeld: return "held";
  }
  return "?";
}

TcpLink::TcpLink(int self, int peer, std::vector<net::Fd> sockets, std::vector<double> weights, std::vector<bool> spares,
                 size_t stripe_bytes, size_t window_bytes, RailPolicy policy)
    : self_(self),
      peer_(peer),
      stripe_(std::min(stripe_bytes, window_bytes / 4)),
      policy_(policy),
      window_(window_bytes),
      out_(new std::byte[window_bytes]),
      in_(new std::byte[window_bytes]),
      scratch_(new std::byte[kScratch]) {
  limits_.max_payload = uint32_t(stripe_);
  limits_.rails = sockets.size();
  for (size_t r = 0; r < sockets.size(); ++r) {
    auto io = std::make_unique<RailIo>();
    io->fd = std::move(sockets[r]);
    io->weight = weights[r];
    io->spare = r < spares.size() && spares[r];
    io->since = io->retry_at = Clock::now();
    if (io->fd) {
      (void)net::set_nonblocking(io->fd.get());
    } else {  // it did not connect in time: reconnected in the background like a failed rail
      io->state.store(int(RailState::kDown), std::memory_order_relaxed);
      io->why = "not connected at the start";
      io->recent_failures = 1;
      log_rail(r, "down from the start (did not connect in time); connected in the background");
    }
    rails_.push_back(std::move(io));
  }
  // Both windows are faulted in only as far as they are used: a peer that gets small
  // messages, or none (every peer connected at init), keeps little memory.
}

TcpLink::~TcpLink() = default;

void TcpLink::fail(const std::string& what) {
  if (status_.ok()) status_ = Error{"rank " + std::to_string(peer_) + ": " + what};
}

void TcpLink::log_rail(size_t rail, const std::string& what) const {
  XCCL_LOG(LogLevel::kInfo, Subsys::kNet, self_, "rail " + std::to_string(rail) + " to rank " + std::to_string(peer_) + ": " + what);
}

void TcpLink::close() {
  for (auto& io : rails_)
    if (io->fd) ::shutdown(io->fd.get(), SHUT_RDWR);  // the peer sees end of stream
}

void TcpLink::finish() {
  for (auto& io : rails_)
    if (io->fd) ::shutdown(io->fd.get(), SHUT_WR);
}

bool TcpLink::finished() {
  bool done = true;
  for (auto& io : rails_) {
    if (!io->fd) continue;
    ssize_t n;
    while ((n = ::recv(io->fd.get(), scratch_.get(), kScratch, MSG_DONTWAIT)) > 0) {
    }
    if (n == 0 || (n < 0 && !transient(errno))) continue;  // ended or broken: nothing more to deliver
    int unacknowledged = 0;
    if (::ioctl(io->fd.get(), SIOCOUTQ, &unacknowledged) == 0 && unacknowledged > 0) done = false;
  }
  return done;
}

Status TcpLink::status() const {
  if (!status_.ok()) return status_;
  if (peer_closed_ && frontier_ == consumed_)
    return Error{"rank " + std::to_string(peer_) + ": closed the connection on every rail (process gone?)"};
  return Status::Ok();
}

std::span<const std::byte> TcpLink::readable() {
  size_t at = size_t(consumed_ & (window_ - 1));
  return {in_.get() + at, std::min(size_t(frontier_ - consumed_), window_ - at)};
}

bool TcpLink::busy() const {
  if (!status_.ok() || peer_closed_) return false;
  // Bytes consumed but not yet acknowledged: the ack goes out once the stream is quiet.
  if (ack_owed_ || consumed_ != ack_sent_) return true;
  // Stripes not yet known to be consumed: the rail they went on must still be watched,
  // or a rail cut under the last stripes of a message would stall the message for good.
  for (const auto& io : rails_)
    if (!io->queue.empty() || !io->unacked.empty() || io->now() != RailState::kUp) return true;
  return false;
}

bool TcpLink::unsent() const {
  if (!status_.ok() || peer_closed_) return false;
  return std::any_of(rails_.begin(), rails_.end(), [](const auto& io) { return io->queued_bytes > 0; });
}

bool TcpLink::in_stripe(size_t rail) const {
  const RailIo& io = *rails_[rail];
  return io.fd && !io.eof && io.now() == RailState::kUp;
}

bool TcpLink::in_stripe_any() const {
  for (size_t r = 0; r < rails_.size(); ++r)
    if (in_stripe(r)) return true;
  return false;
}

// Smooth weighted round robin over the rails in the stripe: those not advised against
// before those that are, and of each, spares only when no other rail is; a rail with a
// stripe still waiting for socket room gives its turn to one without.
int TcpLink::pick_rail(int except) {
  auto tier = [&](size_t r) { return (rails_[r]->advised ? 2 : 0) + (rails_[r]->spare ? 1 : 0); };  // lower first
  int best_tier = 4;
  for (size_t r = 0; r < rails_.size(); ++r)
    if (int(r) != except && in_stripe(r)) best_tier = std::min(best_tier, tier(r));
  auto usable = [&](size_t r) { return int(r) != except && in_stripe(r) && tier(r) == best_tier; };
  int best = -1;
  double total = 0;
  for (size_t r = 0; r < rails_.size(); ++r) {
    if (!usable(r)) continue;
    RailIo& io = *rails_[r];
    io.credit += io.weight, total += io.weight;
    if (best < 0 || io.credit > rails_[size_t(best)]->credit) best = int(r);
  }
  if (best < 0) return -1;
  rails_[size_t(best)]->credit -= total;
  if (rails_[size_t(best)]->queued_bytes >= stripe_)
    for (size_t r = 0; r < rails_.size(); ++r)
      if (usable(r) && rails_[r]->queue.empty()) return int(r);
  return best;
}

void TcpLink::enqueue(size_t rail, Frame f, bool urgent) {
  RailIo& io = *rails_[rail];
  OutFrame o;
  o.f = f;
  io.queued_bytes += payload(f);
  // Control frames overtake waiting stripes, but never cut into one under way.
  auto at = io.queue.end();
  if (urgent) at = io.queue.begin() + (!io.queue.empty() && io.queue.front().pushed > 0 ? 1 : 0);
  io.queue.insert(at, o);
}

size_t TcpLink::send_some(const std::byte* data, size_t bytes) {
  if (!status_.ok() || bytes == 0) return 0;
  if (taken_ - released_ == window_) progress();  // the peer's acks free room
  size_t n = std::min(bytes, window_ - size_t(taken_ - released_));
  if (n == 0 || !in_stripe_any()) return 0;
  size_t at = size_t(taken_ & (window_ - 1)), first = std::min(n, window_ - at);
  std::memcpy(out_.get() + at, data, first);
  std::memcpy(out_.get(), data + first, n - first);
  for (size_t done = 0; done < n;) {
    size_t len = std::min(stripe_, n - done);
    int r = pick_rail();
    enqueue(size_t(r), Frame{FrameKind::kData, uint32_t(len), taken_ + done, 0});
    done += len;
  }
  taken_ += n;
  for (size_t r = 0; r < rails_.size() && status_.ok(); ++r) push(r);
  return n;
}

void TcpLink::push(size_t rail) {
  RailIo& io = *rails_[rail];
  while (io.fd && !io.queue.empty()) {
    OutFrame& o = io.queue.front();
    if (o.pushed == 0) {
      if (o.f.kind == FrameKind::kData) {  // resent stripes: only what the peer has not consumed
        uint64_t end = o.f.offset + o.f.len;
        if (end <= released_) {
          io.queued_bytes -= o.f.len;
          io.queue.pop_front();
          continue;
        }
        if (o.f.offset < released_) io.queued_bytes -= size_t(released_ - o.f.offset), o.f.len = uint32_t(end - released_), o.f.offset = released_;
      }
      o.f.ack = consumed_;
      ack_sent_ = consumed_;
      encode_frame(o.f, o.header);
    }
    iovec iov[3];
    int n_iov = 0;
    if (o.pushed < kFrameHeader) iov[n_iov++] = {o.header + o.pushed, kFrameHeader - o.pushed};
    size_t body_done = o.pushed > kFrameHeader ? o.pushed - kFrameHeader : 0, body = payload(o.f);
    if (body_done < body) {
      uint64_t from = o.f.offset + body_done;
      size_t at = size_t(from & (window_ - 1)), left = body - body_done, first = std::min(left, window_ - at);
      iov[n_iov++] = {out_.get() + at, first};
      if (first < left) iov[n_iov++] = {out_.get(), left - first};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size_t(n_iov);
    ssize_t n = ::sendmsg(io.fd.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (transient(errno)) return;
      return rail_down(rail, std::string("send: ") + std::strerror(errno), true);
    }
    o.pushed += size_t(n);
    io.sent.fetch_add(uint64_t(n), std::memory_order_relaxed);
    if (o.pushed < kFrameHeader + body) return;  // the socket is full
    if (o.f.kind == FrameKind::kData) io.queued_bytes -= o.f.len, io.unacked.push_back(o.f);
    io.queue.pop_front();
  }
}

void TcpLink::receive(size_t rail) {
  RailIo& io = *rails_[rail];
  while (io.fd && !io.eof && status_.ok()) {
    ssize_t n;
    uint64_t at_offset = 0;
    bool placing = false;
    if (!io.in_data) {
      n = ::recv(io.fd.get(), io.header + io.header_got, kFrameHeader - io.header_got, MSG_DONTWAIT);
    } else {
      at_offset = io.in.offset + io.in_got;
      size_t left = io.in.len - io.in_got;
      if (at_offset < frontier_) {  // arrived before (a resent stripe): read and drop
        n = ::recv(io.fd.get(), scratch_.get(), std::min({left, size_t(frontier_ - at_offset), kScratch}), MSG_DONTWAIT);
      } else {
        size_t at = size_t(at_offset & (window_ - 1));
        n = ::recv(io.fd.get(), in_.get() + at, std::min(left, window_ - at), MSG_DONTWAIT);
        placing = true;
      }
    }
    if (n == 0) {  // the peer left (every rail ends at once), or closed this rail (health check)
      io.eof = true, io.eof_at = Clock::now();
      peer_closed_ = std::all_of(rails_.begin(), rails_.end(), [](const auto& r) { return !r->fd || r->eof; });
      return;
    }
    if (n < 0) {
      if (transient(errno)) return;
      return rail_down(rail, std::string("recv: ") + std::strerror(errno), true);
    }
    io.received.fetch_add(uint64_t(n), std::memory_order_relaxed);
    if (!io.in_data) {
      io.header_got += size_t(n);
      if (io.header_got < kFrameHeader) continue;
      io.header_got = 0;
      Result<Frame> f = decode_frame(io.header, limits_);
      if (!f) return fail("rail " + std::to_string(rail) + ": " + f.error().message);
      on_frame(rail, *f);
      continue;
    }
    if (placing) arrived(at_offset, at_offset + uint64_t(n));
    io.in_got += uint32_t(n);
    if (io.in_got == io.in.len) io.in_data = false;
  }
}

void TcpLink::on_frame(size_t rail, const Frame& f) {
  if (f.ack > taken_)
    return fail("rail " + std::to_string(rail) + ": acknowledges " + std::to_string(f.ack) + " bytes of the " +
                std::to_string(taken_) + " sent");
  if (f.ack > released_) {
    released_ = f.ack;
    for (auto& io : rails_)
      while (!io->unacked.empty() && io->unacked.front().offset + io->unacked.front().len <= released_) io->unacked.pop_front();
  }
  RailIo& io = *rails_[rail];
  switch (f.kind) {
    case FrameKind::kData:
      if (f.offset + f.len > consumed_ + window_)
        return fail("rail " + std::to_string(rail) + ": stripe at " + std::to_string(f.offset) + "+" + std::to_string(f.len) +
                    " lies beyond the window (" + std::to_string(consumed_) + "+" + std::to_string(window_) + ")");
      io.in = f, io.in_got = 0, io.in_data = true;
      return;
    case FrameKind::kRailDown:
      if (rails_[f.offset]->fd && rails_[f.offset]->generation == f.len)
        rail_down(size_t(f.offset), "rank " + std::to_string(peer_) + " gave it up", false);
      return;
    case FrameKind::kAck:
    case FrameKind::kHeartbeat: return;
  }
}

// Stream bytes [from, to) are in place: move the frontier over them and over any stripes
// already waiting beyond.
void TcpLink::arrived(uint64_t from, uint64_t to) {
  if (from > frontier_) {
    auto next = beyond_.lower_bound(from);
    if (next != beyond_.begin() && std::prev(next)->second == from) return void(std::prev(next)->second = to);  // a stripe read in pieces
    auto [it, fresh] = beyond_.try_emplace(from, to);
    if (!fresh) it->second = std::max(it->second, to);
    return;
  }
  frontier_ = std::max(frontier_, to);
  while (!beyond_.empty() && beyond_.begin()->first <= frontier_) {
    frontier_ = std::max(frontier_, beyond_.begin()->second);
    beyond_.erase(beyond_.begin());
  }
}

void TcpLink::rail_down(size_t rail, const std::string& why, bool tell_peer) {
  RailIo& io = *rails_[rail];
  if (!io.fd) return;
  auto now = Clock::now();
  bool was_up = io.now() == RailState::kUp;
  linger abort{1, 0};  // reset, do not linger: the path may be gone
  (void)::setsockopt(io.fd.get(), SOL_SOCKET, SO_LINGER, &abort, sizeof abort);
  io.fd = net::Fd();
  io.state.store(int(RailState::kDown), std::memory_order_relaxed);
  io.failures.fetch_add(1, std::memory_order_relaxed);
  io.recent_failures = was_up && now - io.since >= kForgiveAfter ? 1 : io.recent_failures + 1;
  io.since = now;
  io.retry_at = now + doubled(policy_.retry, io.recent_failures, kLongestPause);
  io.why = why;
  io.header_got = 0, io.in_data = false, io.eof = false;
  // Its stripes the peer may not have: out again on the other rails.
  std::vector<Frame> again(io.unacked.begin(), io.unacked.end());
  for (OutFrame& o : io.queue)
    if (o.f.kind == FrameKind::kData) again.push_back(o.f);
  io.unacked.clear(), io.queue.clear(), io.queued_bytes = 0;
  if (!in_stripe_any()) {  // none left in the stripe: a held rail is better than none
    for (size_t r = 0; r < rails_.size(); ++r)
      if (rails_[r]->fd && !rails_[r]->eof) {
        rails_[r]->state.store(int(RailState::kUp), std::memory_order_relaxed);
        log_rail(r, "back in the stripe early: every other rail is down");
      }
  }
  uint64_t moved = 0;
  for (Frame f : again) {
    int to = pick_rail(int(rail));
    if (to < 0) break;
    moved += f.offset + f.len > released_ ? f.offset + f.len - std::max(f.offset, released_) : 0;
    enqueue(size_t(to), f);
  }
  log_rail(rail, std::string(was_up ? "down (" : "down again on probation (") + why + "); " + std::to_string(moved) +
                     " unacknowledged bytes go again on the other rails");
  // A peer that leaves ends every rail, but a rail holding bytes it never read ends with a
  // reset rather than an end of stream: lost after the others ended, it is the peer gone.
  auto ended = [](const auto& r) { return r->fd && r->eof; };
  if (std::any_of(rails_.begin(), rails_.end(), ended) &&
      std::all_of(rails_.begin(), rails_.end(), [&](const auto& r) { return !r->fd || ended(r); }))
    return void(peer_closed_ = true);
  int survivor = pick_rail();
  if (survivor < 0) {
    std::string tried;
    for (size_t r = 0; r < rails_.size(); ++r) tried += (r ? "; rail " : "rail ") + std::to_string(r) + ": " + rails_[r]->why;
    return fail("every rail failed (" + tried + ")");
  }
  if (tell_peer) enqueue(size_t(survivor), Frame{FrameKind::kRailDown, io.generation, rail, 0}, true);
  ack_owed_ = true;  // an ack may have been lost with the rail
  for (size_t r = 0; r < rails_.size(); ++r) push(r);
}

void TcpLink::owe_ack() {
  if (!ack_owed_ && consumed_ - ack_sent_ < window_ / 8) return;
  // A waiting stripe carries it anyway; else a frame of its own on the quietest rail.
  for (size_t r = 0; r < rails_.size(); ++r)
    if (in_stripe(r) && !rails_[r]->queue.empty() && rails_[r]->queue.back().pushed == 0) return void(ack_owed_ = false);
  int r = pick_rail();
  if (r < 0) return;
  enqueue(size_t(r), Frame{FrameKind::kAck, 0, 0, 0}, true);
  ack_owed_ = false;
}

void TcpLink::heed(std::shared_ptr<RailAdviceFile> advice, std::vector<std::string> local, std::vector<std::string> remote) {
  advice_ = std::move(advice), local_addresses_ = std::move(local), remote_addresses_ = std::move(remote);
  advice_seen_ = UINT64_MAX;  // applied at the next health check
}

void TcpLink::apply_advice() {
  advice_seen_ = advice_->version();
  auto listed = [&](const std::vector<std::string>& a, size_t r) { return r < a.size() && advice_->advised(a[r]); };
  for (size_t r = 0; r < rails_.size(); ++r) {
    const bool advised = listed(local_addresses_, r) || listed(remote_addresses_, r);
    if (advised == rails_[r]->advised) continue;
    rails_[r]->advised = advised;
    log_rail(r, advised ? "advised against by the fabric's operators (XCCL_RAIL_ADVICE): stripes go to the other rails"
                        : "no longer advised against: back in the stripe");
  }
}

void TcpLink::check_health(Clock::time_point now) {
  if (now < next_check_) return;
  next_check_ = now + kHealthEvery;
  if (advice_) {
    advice_->refresh(now);
    if (advice_->version() != advice_seen_) apply_advice();
  }
  // Nothing consumed since the last look but some of it unacknowledged: say so now
  // (the sender watches those stripes until it hears; acks otherwise ride on data).
  if (consumed_ != ack_sent_ && consumed_ == consumed_at_check_) ack_owed_ = true;
  consumed_at_check_ = consumed_;
  std::vector<RailSample> samples(rails_.size());
  for (size_t r = 0; r < rails_.size(); ++r) {
    RailIo& io = *rails_[r];
    RailState s = io.now();
    if (!io.fd || io.eof || (s != RailState::kUp && s != RailState::kHeld)) continue;
    if (Result<RailSample> got = sample_rail(io.fd.get()); got) samples[r] = *got;
    // A rail in the stripe is judged by its stripes: a spare carrying only heartbeats and
    // acks through a congested NIC can lose a few in a row and be slow to answer, but it is
    // not what the collective waits on. A rail on probation is judged by its heartbeats.
    bool carries_stripes = !io.unacked.empty() || (!io.queue.empty() && io.queue.front().f.kind == FrameKind::kData);
    if (s == RailState::kUp && !carries_stripes) samples[r].in_flight = false;
    io.in_flight.observe(samples[r], now);
  }
  for (size_t r = 0; r < rails_.size(); ++r)  // one rail ended, the others did not: it was closed, not the link
    if (rails_[r]->fd && rails_[r]->eof && !peer_closed_ && now - rails_[r]->eof_at >= kHealthEvery)
      rail_down(r, "closed by rank " + std::to_string(peer_), false);
  for (size_t r : silent_rails(samples, policy_.stall))
    rail_down(r, "nothing acknowledged for " + std::to_string(samples[r].ms_since_ack) + " ms while other rails were", true);
  bool suspect = suspect_a_rail(samples, policy_.stall);
  for (size_t r = 0; r < rails_.size(); ++r) {
    RailIo& io = *rails_[r];
    if (!io.fd || io.eof) continue;
    RailState s = io.now();
    // Held rails prove themselves with heartbeats; when a rail is suspect, the others do.
    if ((s == RailState::kHeld || suspect) && io.queue.empty() && now - io.last_heartbeat >= kHeartbeatEvery) {
      io.last_heartbeat = now;
      enqueue(r, Frame{FrameKind::kHeartbeat, 0, 0, 0});
    }
    if (s == RailState::kHeld && now - io.since >= doubled(policy_.hold, io.recent_failures, kLongestPause * 2)) {
      io.state.store(int(RailState::kUp), std::memory_order_relaxed);
      io.since = now;
      log_rail(r, "up again after " + std::to_string(io.recent_failures) + " recent failure(s): back in the stripe");
    }
    push(r);
  }
}

void TcpLink::progress() {
  if (!status_.ok()) return;
  for (size_t r = 0; r < rails_.size() && status_.ok(); ++r) receive(r);
  if (!status_.ok()) return;
  owe_ack();
  for (size_t r = 0; r < rails_.size(); ++r) push(r);
  check_health(Clock::now());
}

bool TcpLink::wants_connection(size_t rail, Clock::time_point now) const {
  const RailIo& io = *rails_[rail];
  return !peer_closed_ && status_.ok() && !io.fd && io.now() == RailState::kDown &&
         now >= io.retry_at;
}

void TcpLink::connecting(size_t rail) { rails_[rail]->state.store(int(RailState::kProbing), std::memory_order_relaxed); }

void TcpLink::install(size_t rail, net::Fd fd) {
  RailIo& io = *rails_[rail];
  if (io.fd) rail_down(rail, "replaced: rank " + std::to_string(peer_) + " connected it again", false);
  (void)net::set_nonblocking(fd.get());
  io.fd = std::move(fd);
  ++io.generation;
  io.credit = 0;
  io.in_flight.reset();
  io.since = Clock::now();
  io.state.store(int(RailState::kHeld), std::memory_order_relaxed);
  log_rail(rail, "reconnected; held out of the stripe for " +
                     std::to_string(doubled(policy_.hold, io.recent_failures, kLongestPause * 2).count()) + " ms");
}

Result<std::vector<net::Fd>> listen_on_rails(std::vector<Rail>& rails) {
  std::vector<net::Fd> out;
  for (Rail& r : rails) {
    Result<net::Fd> fd = net::listen_on(r.host, 0, &r.port);
    if (!fd) return Error{"rail " + r.host + ": " + fd.error().message};
    out.push_back(std::move(fd).value());
  }
  return out;
}

}  // namespace xm::ccl
