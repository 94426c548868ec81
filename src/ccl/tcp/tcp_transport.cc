#include "ccl/tcp/tcp_transport.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "ccl/log.h"

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

}  // namespace xm::ccl
