#include "ops/prober.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>

namespace xm::ops {
namespace {

constexpr uint64_t kMagic = 0x786d2d70726f6265ull;  // "xm-probe"
constexpr uint32_t kReply = 1;

struct Header {
  uint64_t magic;
  uint64_t seq;
  uint32_t flags;
  uint32_t flow;  // the sender's flow index, echoed back
};

sockaddr_in socket_address(Ipv4 a, uint16_t port) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(port);
  s.sin_addr.s_addr = htonl(a.value);
  return s;
}

Result<int> bound_udp(Ipv4 address, uint16_t port) {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return Error{std::string("UDP socket: ") + std::strerror(errno)};
  int one = 1;
  ::setsockopt(fd, IPPROTO_IP, IP_FREEBIND, &one, sizeof one);  // the address may be missing for now
  sockaddr_in a = socket_address(address, port);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    int e = errno;
    ::close(fd);
    return Error{"binding UDP " + to_string(address) + ":" + std::to_string(port) + ": " + std::strerror(e)};
  }
  return fd;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::chrono::steady_clock::duration span(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

Prober::Prober(std::vector<ProbeTarget> targets, const ProberOptions& options)
    : targets_(std::move(targets)), options_(options) {
  options_.flows = std::max<uint32_t>(options_.flows, 1);
  options_.payload_bytes = std::max<uint32_t>(options_.payload_bytes, sizeof(Header));
  packet_.resize(options_.payload_bytes);
  std::map<uint32_t, size_t> nic_of;  // address -> index in nics_
  for (size_t t = 0; t < targets_.size(); ++t) {
    auto [it, fresh] = nic_of.try_emplace(targets_[t].src.value, nics_.size());
    if (fresh) nics_.push_back(Nic{targets_[t].src, -1, {}, {}});
    flow_base_.push_back(flows_.size());
    for (uint32_t f = 0; f < flows_of(t); ++f) flows_.push_back(Flow{t, f, it->second, {}, {}});
  }
  // Spread the first probes over one interval, so the agent sends at an even rate.
  const auto start = Clock::now();
  for (size_t i = 0; i < flows_.size(); ++i)
    flows_[i].due = start + span(options_.interval_s * double(i) / double(std::max<size_t>(flows_.size(), 1)));
  snapshot_.flows.resize(flows_.size());
}

Prober::~Prober() {
  for (Nic& n : nics_) {
    if (n.echo_fd >= 0) ::close(n.echo_fd);
    for (int fd : n.send_fds) ::close(fd);
  }
}

Result<std::unique_ptr<Prober>> Prober::open(std::vector<ProbeTarget> targets, const ProberOptions& options) {
  if (options.port == 0 || options.port > 65535 - options.flows - 1) return Error{"probe port out of range"};
  std::unique_ptr<Prober> p(new Prober(std::move(targets), options));
  if (Status st = p->open_sockets(); !st) return Error{st.message()};
  return p;
}

Status Prober::open_sockets() {
  for (Nic& n : nics_) {
    Result<int> echo = bound_udp(n.address, options_.port);
    if (!echo) return Error{echo.error().message};
    n.echo_fd = *echo;
    for (uint32_t f = 0; f < options_.flows; ++f) {
      Result<int> s = bound_udp(n.address, uint16_t(options_.port + 1 + f));
      if (!s) return Error{s.error().message};
      n.send_fds.push_back(*s);
    }
  }
  return Status::Ok();
}

bool Prober::is_fast(const Flow& f, Clock::time_point now) const {
  return now < f.fast_until || now < nics_[f.nic].fast_until;
}

void Prober::lose(size_t flow, Clock::time_point now) {
  Flow& f = flows_[flow];
  const auto until = now + span(options_.suspect_hold_s);
  f.fast_until = nics_[f.nic].fast_until = until;
  // Probe the suspect again soon rather than at its old, slow turn.
  f.due = std::min(f.due, now + span(options_.fast_interval_s));
}

void Prober::send_due(Clock::time_point now) {
  for (size_t i = 0; i < flows_.size(); ++i) {
    Flow& f = flows_[i];
    if (f.due > now) continue;
    const ProbeTarget& t = targets_[f.target];
    Header h{kMagic, next_seq_++, 0, uint32_t(i)};
    std::memcpy(packet_.data(), &h, sizeof h);
    sockaddr_in to = socket_address(t.dst, options_.port);
    ssize_t n = ::sendto(nics_[f.nic].send_fds[f.flow], packet_.data(), packet_.size(), 0,
                         reinterpret_cast<sockaddr*>(&to), sizeof to);
    const bool fast = is_fast(f, now);
    {
      std::lock_guard<std::mutex> lock(mu_);
      FlowStats& s = snapshot_.flows[i];
      ++s.sent;
      s.fast = fast;
      snapshot_.lag_sum_s += seconds(now - f.due);
      ++snapshot_.lag_count;
      if (n < 0) ++s.lost, ++s.send_errors;
    }
    if (n < 0) lose(i, now);
    else {
      pending_.emplace(h.seq, Pending{i, now});
      in_flight_.push_back(h.seq);
    }
    const double interval = fast ? options_.fast_interval_s : options_.interval_s;
    f.due += span(interval);
    if (f.due <= now) f.due = now + span(interval);  // fell behind (a starved agent): no burst to catch up
  }
}

void Prober::expire(Clock::time_point now) {
  const auto timeout = span(options_.timeout_s);
  while (!in_flight_.empty()) {
    auto it = pending_.find(in_flight_.front());
    if (it == pending_.end()) {  // answered
      in_flight_.pop_front();
      continue;
    }
    if (now - it->second.sent < timeout) break;
    const size_t flow = it->second.flow;
    pending_.erase(it);
    in_flight_.pop_front();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++snapshot_.flows[flow].lost;
    }
    lose(flow, now);
  }
}

void Prober::drain_echo(int fd) {
  for (;;) {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    ssize_t n = ::recvfrom(fd, packet_.data(), packet_.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return;  // drained (EAGAIN) or an error to try again next time
    Header h;
    if (size_t(n) < sizeof h) continue;
    std::memcpy(&h, packet_.data(), sizeof h);
    if (h.magic != kMagic || (h.flags & kReply)) continue;  // not a probe: ignore it
    h.flags |= kReply;
    std::memcpy(packet_.data(), &h, sizeof h);
    if (::sendto(fd, packet_.data(), size_t(n), 0, reinterpret_cast<sockaddr*>(&from), len) >= 0) {
      std::lock_guard<std::mutex> lock(mu_);
      ++snapshot_.echoed;
    }
  }
}

void Prober::drain_replies(int fd, Clock::time_point now) {
  for (;;) {
    ssize_t n = ::recv(fd, packet_.data(), packet_.size(), 0);
    if (n < 0) return;
    Header h;
    if (size_t(n) < sizeof h) continue;
    std::memcpy(&h, packet_.data(), sizeof h);
    if (h.magic != kMagic || !(h.flags & kReply)) continue;
    auto it = pending_.find(h.seq);
    if (it == pending_.end()) {  // after its timeout, or not ours
      std::lock_guard<std::mutex> lock(mu_);
      if (h.flow < snapshot_.flows.size() && h.seq < next_seq_) ++snapshot_.flows[h.flow].late;
      continue;
    }
    const Pending p = it->second;
    pending_.erase(it);
    std::lock_guard<std::mutex> lock(mu_);
    FlowStats& s = snapshot_.flows[p.flow];
    ++s.received;
    s.rtt_sum_s += seconds(now - p.sent);
  }
}

void Prober::run(const std::atomic<bool>& stop) {
  std::vector<pollfd> fds;
  std::vector<bool> is_echo;
  for (const Nic& n : nics_) {
    fds.push_back({n.echo_fd, POLLIN, 0});
    is_echo.push_back(true);
    for (int fd : n.send_fds) {
      fds.push_back({fd, POLLIN, 0});
      is_echo.push_back(false);
    }
  }
  while (!stop.load(std::memory_order_relaxed)) {
    auto now = Clock::now();
    send_due(now);
    expire(now);
    auto next = now + std::chrono::milliseconds(100);
    for (const Flow& f : flows_) next = std::min(next, f.due);
    if (!in_flight_.empty())
      if (auto it = pending_.find(in_flight_.front()); it != pending_.end())
        next = std::min(next, it->second.sent + span(options_.timeout_s));
    int wait_ms = int(std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1));
    if (::poll(fds.data(), fds.size(), wait_ms) <= 0) continue;
    now = Clock::now();
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & POLLIN)) continue;
      if (is_echo[i]) drain_echo(fds[i].fd);
      else drain_replies(fds[i].fd, now);
    }
  }
}

ProberSnapshot Prober::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

}  // namespace xm::ops
