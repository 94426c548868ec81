#include "ccl/net/gate.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace xm::ccl::net {
namespace {

// Sources remembered for log-once; past this many, refusals are only counted.
constexpr size_t kMaxSources = 4096;

}  // namespace

struct Gate::Pending {
  Fd fd;
  size_t listener = 0;
  Endpoint from;
  Clock::time_point deadline;
  std::vector<uint8_t> hello;
  size_t hello_have = 0;
  std::optional<Handshake> handshake;  // made once the hello names the purpose
};

Gate::Gate(std::vector<int> listeners, const Secret& secret, Rules rules)
    : listeners_(std::move(listeners)), secret_(secret), rules_(std::move(rules)) {
  for (int l : listeners_) (void)set_nonblocking(l);
  rules_.max_pending = std::max<size_t>(rules_.max_pending, 1);
}

Gate::~Gate() = default;

void Gate::refuse(size_t listener, const std::string& from, const std::string& why) {
  ++refused_;
  std::string host = from.substr(0, from.rfind(':'));
  auto it = refusals_by_source_.find(host);
  if (it != refusals_by_source_.end()) {
    ++it->second;
    return;
  }
  if (refusals_by_source_.size() < kMaxSources) refusals_by_source_.emplace(host, 1);
  if (rules_.warn) rules_.warn(listener, from, why + " (later refusals from " + host + " are counted, not logged)");
}

void Gate::accept_all(size_t listener) {
  while (true) {
    Fd fd(::accept4(listeners_[listener], nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd) {
      // Out of descriptors: make room by dropping the oldest handshake, take the rest next time.
      if ((errno == EMFILE || errno == ENFILE) && !pending_.empty()) {
        Pending& old = *pending_.front();
        refuse(old.listener, old.from.str(), "dropped: out of file descriptors");
        pending_.pop_front();
      }
      return;
    }
    if (pending_.size() >= rules_.max_pending) {
      Pending& old = *pending_.front();
      refuse(old.listener, old.from.str(),
             "dropped: " + std::to_string(rules_.max_pending) + " connections were handshaking at once");
      pending_.pop_front();
    }
    set_nodelay(fd.get());
    auto p = std::make_unique<Pending>();
    p->from = peer_endpoint(fd.get());
    p->fd = std::move(fd);
    p->listener = listener;
    p->deadline = Clock::now() + rules_.handshake_timeout;
    p->hello.resize(rules_.hello_bytes);
    pending_.push_back(std::move(p));
  }
}

bool Gate::step(Pending& p) {
  auto fail = [&](const std::string& why) {
    refuse(p.listener, p.from.str(), why);
    return false;
  };
  if (!p.handshake) {  // the hello first, exactly its size
    while (p.hello_have < p.hello.size()) {
      ssize_t n = ::recv(p.fd.get(), p.hello.data() + p.hello_have, p.hello.size() - p.hello_have, MSG_DONTWAIT);
      if (n == 0) return fail("closed before its hello");
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return true;
        return fail(std::string("recv: ") + std::strerror(errno));
      }
      p.hello_have += size_t(n);
    }
    Result<std::string> purpose = rules_.purpose(p.listener, p.hello);  // the claim: what must it prove?
    if (!purpose) return fail(purpose.error().message);
    p.handshake.emplace(secret_, false, std::move(purpose).value());
  }
  std::string why;
  switch (pump(p.fd.get(), *p.handshake, &why)) {
    case HandshakeIo::kWaiting: return true;
    case HandshakeIo::kDone:
      ready_.push_back({p.listener, p.from.str(), std::move(p.hello), std::move(p.fd)});
      return false;
    case HandshakeIo::kBroken: return fail(why + " during the handshake");
    case HandshakeIo::kRefused: break;
  }
  return fail(why);
}

void Gate::poll_fds(std::vector<pollfd>& out) const {
  for (int l : listeners_) out.push_back({l, POLLIN, 0});
  for (auto& p : pending_) {
    bool writing = p->handshake && !p->handshake->output().empty();
    out.push_back({p->fd.get(), short(POLLIN | (writing ? POLLOUT : 0)), 0});
  }
}

void Gate::expire(Clock::time_point now) {
  for (auto it = pending_.begin(); it != pending_.end();) {
    if ((*it)->deadline > now) {
      ++it;
      continue;
    }
    std::string why = (*it)->handshake ? "did not finish the handshake" : "did not send its hello";
    refuse((*it)->listener, (*it)->from.str(), why + " within " + std::to_string(rules_.handshake_timeout.count()) + " ms");
    it = pending_.erase(it);
  }
}

Result<Gate::Arrival> Gate::admit(Clock::time_point deadline) {
  std::vector<pollfd> fds;
  for (bool first = true; ready_.empty(); first = false) {  // polls once even past the deadline
    Clock::time_point now = Clock::now();
    if (!first && now >= deadline) return Error{"timed out"};
    Clock::time_point wake = std::max(deadline, now);
    for (auto& p : pending_) wake = std::min(wake, p->deadline);
    fds.clear();
    poll_fds(fds);
    auto ms = wake <= now ? 0 : std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count() + 1;
    int rc = ::poll(fds.data(), fds.size(), int(std::clamp<int64_t>(ms, 0, 1000)));
    if (rc < 0 && errno != EINTR) return Error{std::string("poll: ") + std::strerror(errno)};
    if (rc > 0) {
      // Handshakes before new arrivals: the polled entries still line up with pending_.
      size_t index = listeners_.size();
      for (auto it = pending_.begin(); it != pending_.end(); ++index) {
        if (fds[index].revents == 0 || step(**it)) {
          ++it;
          continue;
        }
        it = pending_.erase(it);  // admitted (into ready_) or refused
      }
      for (size_t l = 0; l < listeners_.size(); ++l)
        if (fds[l].revents & POLLIN) accept_all(l);
    }
    // Then deadlines: what arrived in time counts even when this rank was slow to look.
    expire(Clock::now());
  }
  Arrival a = std::move(ready_.front());
  ready_.pop_front();
  return a;
}

Dialer::Dialer(Endpoint to, std::span<const uint8_t> hello, const Secret& secret, std::string purpose, std::string from)
    : to_(std::move(to)), hello_(hello.begin(), hello.end()), secret_(secret), purpose_(std::move(purpose)),
      from_(std::move(from)) {}

Dialer::State Dialer::retry(std::string why) {
  error_ = std::move(why);
  fd_ = Fd();
  resume_at_ = Clock::now() + pause_;
  pause_ = std::min(pause_ * 2, std::chrono::milliseconds(200));
  return State::kBusy;
}

pollfd Dialer::waits_for() const {
  if (!fd_) return {-1, 0, 0};
  bool writing = !connected_ || hello_sent_ < hello_.size() || !handshake_->output().empty();
  return {fd_.get(), short(writing ? POLLOUT : POLLIN), 0};
}

Dialer::State Dialer::step() {
  if (state_ != State::kBusy) return state_;
  if (!fd_) {
    if (Clock::now() < resume_at_) return State::kBusy;
    Result<Fd> fd = start_connect(to_, from_);
    if (!fd) return retry(fd.error().message);
    fd_ = std::move(fd).value();
    connected_ = false;
    hello_sent_ = 0;
    handshake_.emplace(secret_, true, purpose_);
  }
  if (!connected_) {
    Result<bool> done = connect_done(fd_.get());
    if (!done) return retry("cannot connect to " + to_.str() + ": " + done.error().message);
    if (!*done) return State::kBusy;
    connected_ = true;
  }
  while (hello_sent_ < hello_.size()) {
    ssize_t n = ::send(fd_.get(), hello_.data() + hello_sent_, hello_.size() - hello_sent_, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return State::kBusy;
      return retry(std::string("send: ") + std::strerror(errno));
    }
    hello_sent_ += size_t(n);
  }
  std::string why;
  switch (pump(fd_.get(), *handshake_, &why)) {
    case HandshakeIo::kWaiting: return State::kBusy;
    case HandshakeIo::kDone: return state_ = State::kDone;
    case HandshakeIo::kBroken: return retry(to_.str() + ": " + why + " before the handshake was decided");
    case HandshakeIo::kRefused: break;
  }
  error_ = why;  // final: wrong peer or secret
  fd_ = Fd();
  return state_ = State::kFailed;
}

Result<Fd> dial(const Endpoint& to, std::span<const uint8_t> hello, const Secret& secret, const std::string& purpose,
                Clock::time_point deadline, const std::string& from) {
  Dialer d(to, hello, secret, purpose, from);
  while (true) {
    Dialer::State s = d.step();
    if (s == Dialer::State::kDone) return d.take();
    if (s == Dialer::State::kFailed) return Error{d.error()};
    auto now = Clock::now();
    if (now >= deadline) return Error{d.error().empty() ? "timed out connecting to " + to.str() : d.error()};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1;
    pollfd p = d.waits_for();
    if (p.fd < 0) std::this_thread::sleep_for(std::chrono::milliseconds(std::min<int64_t>(left, 5)));
    else ::poll(&p, 1, int(std::min<int64_t>(left, 100)));
  }
}

}  // namespace xm::ccl::net
