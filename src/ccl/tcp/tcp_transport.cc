#include "ccl/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "ccl/log.h"
#include "ccl/net/gate.h"

namespace xm::ccl {

TcpLink::TcpLink(int peer, std::vector<net::Fd> sockets, std::vector<double> weights, size_t stripe_bytes,
                 size_t staging_bytes)
    : peer_(peer),
      sockets_(std::move(sockets)),
      stripe_(stripe_bytes),
      send_plan_(weights),
      recv_plan_(weights),
      staging_memory_(new std::byte[kFifoHeader + staging_bytes]),
      staging_(staging_memory_.get(), staging_bytes, true),
      sent_(sockets_.size()),
      received_(sockets_.size()) {
  for (net::Fd& fd : sockets_) (void)net::set_nonblocking(fd.get());
  std::memset(staging_memory_.get() + kFifoHeader, 0, staging_bytes);  // fault the pages in now, not per message
}

void TcpLink::fail(const std::string& what) {
  if (status_.ok()) status_ = Error{"rank " + std::to_string(peer_) + ": " + what};
}

void TcpLink::close() {
  for (net::Fd& fd : sockets_) ::shutdown(fd.get(), SHUT_RDWR);  // the peer sees end of stream
}

Status TcpLink::status() const {
  if (!status_.ok()) return status_;
  if (peer_closed_ && staging_.readable().empty())
    return Error{"rank " + std::to_string(peer_) + ": closed the connection on rail " + std::to_string(recv_rail_) +
                 " (process gone?)"};
  return Status::Ok();
}

size_t TcpLink::send_some(const std::byte* data, size_t bytes) {
  size_t done = 0;
  while (done < bytes && status_.ok()) {
    if (send_left_ == 0) send_rail_ = send_plan_.next(), send_left_ = stripe_;
    size_t want = std::min(bytes - done, send_left_);
    ssize_t n = ::send(sockets_[send_rail_].get(), data + done, want, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
      done += size_t(n), send_left_ -= size_t(n), sent_[send_rail_] += uint64_t(n);
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
    fail(std::string("send on rail ") + std::to_string(send_rail_) + ": " + std::strerror(errno));
  }
  return done;
}

void TcpLink::progress() {
  while (status_.ok() && !peer_closed_) {
    std::span<std::byte> room = staging_.writable();
    if (room.empty()) return;
    if (recv_left_ == 0) recv_rail_ = recv_plan_.next(), recv_left_ = stripe_;
    ssize_t n = ::recv(sockets_[recv_rail_].get(), room.data(), std::min(room.size(), recv_left_), MSG_DONTWAIT);
    if (n > 0) {
      staging_.commit(size_t(n));
      recv_left_ -= size_t(n), received_[recv_rail_] += uint64_t(n);
      continue;
    }
    if (n == 0) {
      peer_closed_ = true;
      return;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
    return fail(std::string("recv on rail ") + std::to_string(recv_rail_) + ": " + std::strerror(errno));
  }
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

namespace {

std::string purpose(int a, int b, size_t rail) {
  return "data/" + std::to_string(std::min(a, b)) + "/" + std::to_string(std::max(a, b)) + "/" + std::to_string(rail);
}

}  // namespace

Result<std::map<int, std::unique_ptr<TcpLink>>> connect_tcp(const TcpSetup& s) {
  std::map<int, std::vector<net::Fd>> sockets;
  auto rails_with = [&](int peer) { return std::min(s.rails.size(), s.peers.at(peer).size()); };
  // Connect to lower ranks first, then accept higher ones: rank 0 only accepts, and
  // each rank reaches its accept phase once the lower ranks have, so nobody waits in a cycle.
  for (auto& [peer, theirs] : s.peers) {
    if (peer > s.rank) continue;
    for (size_t r = 0; r < rails_with(peer); ++r) {
      // Say who we claim to be, then prove it: the proof binds both ranks and the rail.
      uint32_t hello[2] = {htonl(uint32_t(s.rank)), htonl(uint32_t(r))};
      Result<net::Fd> fd = net::dial({theirs[r].host, theirs[r].port}, {reinterpret_cast<const uint8_t*>(hello), sizeof hello},
                                     s.secret, purpose(s.rank, peer, r), s.deadline, s.rails[r].host);
      if (!fd) return Error{"rank " + std::to_string(peer) + " rail " + std::to_string(r) + ": " + fd.error().message};
      sockets[peer].push_back(std::move(fd).value());
    }
  }
  // Then every higher rank's connections, one per rail, on that rail's listener.
  std::map<int, std::vector<net::Fd>> accepted;
  size_t expected = 0;
  for (auto& [peer, theirs] : s.peers)
    if (peer > s.rank) expected += rails_with(peer), accepted[peer].resize(rails_with(peer));
  // The hello claims a rank and rail; the handshake then proves the claim. The gate runs
  // every handshake at once: a stranger on a rail's port delays no rank.
  net::Gate::Rules rules;
  rules.hello_bytes = 8;
  rules.purpose = [&](size_t listener, std::span<const uint8_t> bytes) -> Result<std::string> {
    uint32_t hello[2];
    std::memcpy(hello, bytes.data(), sizeof hello);
    int peer = int(ntohl(hello[0]));
    size_t rail = ntohl(hello[1]);
    auto it = accepted.find(peer);
    if (it == accepted.end() || rail != listener || rail >= it->second.size() || it->second[rail])
      return Error{"unexpected hello (rank " + std::to_string(peer) + ", rail " + std::to_string(rail) + ")"};
    return purpose(s.rank, peer, rail);
  };
  rules.warn = [&](size_t rail, const std::string& from, const std::string& why) {
    XCCL_LOG(LogLevel::kWarn, Subsys::kNet, s.rank,
             "refused data connection from " + from + " on rail " + std::to_string(rail) + ": " + why);
  };
  std::vector<int> listening;
  for (const net::Fd& l : *s.listeners) listening.push_back(l.get());
  net::Gate gate(listening, s.secret, rules);
  for (size_t got = 0; got < expected;) {
    Result<net::Gate::Arrival> in = gate.admit(s.deadline);
    if (!in) return Error{"timed out waiting for " + std::to_string(expected - got) + " TCP connections from higher ranks"};
    uint32_t hello[2];
    std::memcpy(hello, in->hello.data(), sizeof hello);
    std::vector<net::Fd>& theirs = accepted[int(ntohl(hello[0]))];
    net::Fd& slot = theirs[ntohl(hello[1])];
    if (slot) {  // two proven connections for one rail: the gate checked before either finished
      gate.refuse(in->listener, in->from, "rail " + std::to_string(in->listener) + " connected twice");
      continue;
    }
    slot = std::move(in->fd);
    ++got;
  }
  for (auto& [peer, fds] : accepted) sockets[peer] = std::move(fds);
  for (net::Fd& l : *s.listeners) l = net::Fd();  // later connections are refused by the kernel

  std::map<int, std::unique_ptr<TcpLink>> links;
  for (auto& [peer, fds] : sockets) {
    std::vector<double> weights;
    for (size_t r = 0; r < fds.size(); ++r) weights.push_back(std::min(s.rails[r].gbps, s.peers.at(peer)[r].gbps));
    links[peer] = std::make_unique<TcpLink>(peer, std::move(fds), weights, s.stripe_bytes, s.staging_bytes);
  }
  return links;
}

}  // namespace xm::ccl
