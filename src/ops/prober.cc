#include "ops/prober.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
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

int64_t wall_ns() {
  timespec ts;
  ::clock_gettime(CLOCK_REALTIME, &ts);  // the clock the kernel stamps packets with
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::chrono::steady_clock::duration span(double s) {
  return std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

ProberOptions within_budget(const ProberOptions& asked, const std::vector<ProbeTarget>& targets) {
  ProberOptions o = asked;
  o.flows = std::max<uint32_t>(o.flows, 1);
  if (!(o.budget_per_s > 0) || targets.empty()) return o;
  const double cross = double(std::count_if(targets.begin(), targets.end(), [](const ProbeTarget& t) { return t.cross_rail; }));
  const double rail = double(targets.size()) - cross;
  if (cross > 0) {  // the flows one interval of the budget pays for
    const double spare = std::floor((o.budget_per_s * o.interval_s - rail) / cross);
    if (spare > double(o.flows)) o.flows = uint32_t(std::min(spare, double(std::max(kBudgetFlows, o.flows))));
  }
  const double per_interval = rail + cross * double(o.flows);
  o.interval_s = std::min(o.interval_s, std::max(o.fast_interval_s, per_interval / o.budget_per_s));
  return o;
}

Prober::Prober(std::vector<ProbeTarget> targets, const ProberOptions& options)
    : targets_(std::move(targets)), options_(within_budget(options, targets_)) {
  options_.payload_bytes = std::max<uint32_t>(options_.payload_bytes, sizeof(Header));
  packet_.resize(options_.payload_bytes);
  std::map<uint32_t, size_t> nic_of;  // address -> index in nics_
  for (size_t t = 0; t < targets_.size(); ++t) {
    auto [it, fresh] = nic_of.try_emplace(targets_[t].src.value, nics_.size());
    if (fresh) nics_.push_back(Nic{targets_[t].src, -1, {}, {}});
    flow_base_.push_back(flows_.size());
    for (uint32_t f = 0; f < flows_of(t); ++f) flows_.push_back(Flow{t, f, it->second, {}});
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
      int one = 1;
      ::setsockopt(*s, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
      n.send_fds.push_back(*s);
    }
  }
  return Status::Ok();
}

void Prober::lose(size_t flow, Clock::time_point now) {
  Flow& f = flows_[flow];
  nics_[f.nic].fast_until = now + span(options_.suspect_hold_s);
  // Probe the suspect again soon rather than at its old, slow turn.
  f.due = std::min(f.due, now + span(options_.fast_interval_s));
}

void Prober::send_due(Clock::time_point now) {
  for (size_t i = 0; i < flows_.size(); ++i) {
    Flow& f = flows_[i];
    if (f.due > now + kTick / 2) continue;  // this tick sends what falls due before the next one's middle
    const ProbeTarget& t = targets_[f.target];
    const uint64_t seq = first_seq_ + in_flight_.size();
    Header h{kMagic, seq, 0, uint32_t(i)};
    std::memcpy(packet_.data(), &h, sizeof h);
    sockaddr_in to = socket_address(t.dst, options_.port);
    const int64_t sent_ns = wall_ns();
    ssize_t n = ::sendto(nics_[f.nic].send_fds[f.flow], packet_.data(), packet_.size(), 0,
                         reinterpret_cast<sockaddr*>(&to), sizeof to);
    const bool fast = now < nics_[f.nic].fast_until;
    {
      std::lock_guard<std::mutex> lock(mu_);
      FlowStats& s = snapshot_.flows[i];
      ++s.sent;
      s.fast = fast;
      snapshot_.lag_sum_s += std::max(0.0, seconds(now - f.due));
      ++snapshot_.lag_count;
      if (n < 0) ++s.lost, ++s.send_errors, ++s.lost_in_a_row;
    }
    in_flight_.push_back(InFlight{i, now, sent_ns, n < 0});
    if (n < 0) lose(i, now);
    const double interval = fast ? options_.fast_interval_s : options_.interval_s;
    f.due += span(interval);
    if (f.due <= now) f.due = now + span(interval);  // fell behind (a starved agent): no burst to catch up
  }
}

void Prober::expire(Clock::time_point now) {
  const auto timeout = span(options_.timeout_s);
  for (; !in_flight_.empty(); in_flight_.pop_front(), ++first_seq_) {
    const InFlight& p = in_flight_.front();
    if (p.done) continue;
    if (now - p.sent < timeout) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      FlowStats& st = snapshot_.flows[p.flow];
      ++st.lost, ++st.lost_in_a_row;
    }
    lose(p.flow, now);
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

void Prober::drain_replies(int fd) {
  for (;;) {
    iovec iov{packet_.data(), packet_.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(timespec))];
    msghdr m{};
    m.msg_iov = &iov, m.msg_iovlen = 1, m.msg_control = control, m.msg_controllen = sizeof control;
    ssize_t n = ::recvmsg(fd, &m, 0);
    if (n < 0) return;
    Header h;
    if (size_t(n) < sizeof h) continue;
    std::memcpy(&h, packet_.data(), sizeof h);
    if (h.magic != kMagic || !(h.flags & kReply)) continue;
    // When the reply reached the host, by the kernel's clock: replies are read once a
    // tick, not as they come, and the round trip must not include the wait.
    int64_t arrived_ns = wall_ns();
    for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        arrived_ns = int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
      }
    std::lock_guard<std::mutex> lock(mu_);
    if (h.seq < first_seq_ || h.seq - first_seq_ >= in_flight_.size() || in_flight_[h.seq - first_seq_].done) {
      // after its timeout, or again (or not ours at all)
      // Delivered, if late: the path forwards this 5-tuple.
      if (h.flow < snapshot_.flows.size() && h.seq < first_seq_ + in_flight_.size())
        ++snapshot_.flows[h.flow].late, snapshot_.flows[h.flow].lost_in_a_row = 0;
      continue;
    }
    InFlight& p = in_flight_[h.seq - first_seq_];
    p.done = true;
    FlowStats& st = snapshot_.flows[p.flow];
    ++st.received;
    st.lost_in_a_row = 0;
    st.rtt_sum_s += double(std::max<int64_t>(0, arrived_ns - p.sent_ns)) * 1e-9;
  }
}

void Prober::run(const std::atomic<bool>& stop) {
  // Two epoll sets: echo sockets wake the loop (a peer's probe is answered at once, so
  // its round trip is the network's), reply sockets are read once a tick. Sends go out
  // a tick at a time too: a few wake-ups a tick instead of one per packet.
  const int echoes = ::epoll_create1(EPOLL_CLOEXEC), replies = ::epoll_create1(EPOLL_CLOEXEC);
  for (const Nic& n : nics_) {
    epoll_event e{EPOLLIN, {}};
    e.data.fd = n.echo_fd;
    ::epoll_ctl(echoes, EPOLL_CTL_ADD, n.echo_fd, &e);
    for (int fd : n.send_fds) {
      e.data.fd = fd;
      ::epoll_ctl(replies, EPOLL_CTL_ADD, fd, &e);
    }
  }
  epoll_event ready[64];
  while (!stop.load(std::memory_order_relaxed)) {
    auto now = Clock::now();
    for (int k = ::epoll_wait(replies, ready, 64, 0), i = 0; i < k; ++i) drain_replies(ready[i].data.fd);
    expire(now);
    send_due(now);
    const auto tick_end = now + kTick;
    while (!stop.load(std::memory_order_relaxed) && (now = Clock::now()) < tick_end) {
      int wait_ms = int(std::chrono::ceil<std::chrono::milliseconds>(tick_end - now).count());
      int k = ::epoll_wait(echoes, ready, 64, wait_ms);
      for (int i = 0; i < k; ++i) drain_echo(ready[i].data.fd);
    }
  }
  ::close(echoes);
  ::close(replies);
}

ProberSnapshot Prober::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

}  // namespace xm::ops
