#include "ccl/net/socket.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

namespace xm::ccl::net {

Fd& Fd::operator=(Fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

Fd::~Fd() {
  if (fd_ >= 0) ::close(fd_);
}

namespace {

std::string errno_text(const char* what) { return std::string(what) + ": " + std::strerror(errno); }

Result<addrinfo*> resolve(const std::string& host, uint16_t port, bool passive) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  std::string service = std::to_string(port);
  int rc = getaddrinfo(host.empty() ? nullptr : host.c_str(), service.c_str(), &hints, &res);
  if (rc != 0) return Error{"cannot resolve \"" + host + "\": " + gai_strerror(rc)};
  return res;
}

int millis_left(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left < 0 ? 0 : left > 1000 ? 1000 : int(left);
}

}  // namespace

Status wait_for(int fd, short events, Clock::time_point deadline, const char* what) {
  while (true) {
    pollfd p{fd, events, 0};
    int rc = ::poll(&p, 1, millis_left(deadline));
    if (rc > 0) return Status::Ok();
    if (rc < 0 && errno != EINTR) return Error{errno_text("poll")};
    if (Clock::now() >= deadline) return Error{std::string("timed out waiting to ") + what};
  }
}

Result<Fd> listen_on(const std::string& host, uint16_t port, uint16_t* bound_port) {
  Result<addrinfo*> res = resolve(host, port, true);
  if (!res) return res.error();
  std::string last = "no address";
  for (addrinfo* ai = *res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd) continue;
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(fd.get(), 256) != 0) {
      last = errno_text("bind/listen");
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    if (bound_port)
      *bound_port = ntohs(ss.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port
                                                    : reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    freeaddrinfo(*res);
    return fd;
  }
  freeaddrinfo(*res);
  return Error{"cannot listen on " + Endpoint{host, port}.str() + ": " + last};
}

Result<Fd> start_connect(const Endpoint& to, const std::string& from) {
  Result<addrinfo*> res = resolve(to.host, to.port, false);
  if (!res) return res.error();
  std::string last = "no address";
  for (addrinfo* ai = *res; ai; ai = ai->ai_next) {
    Fd fd(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) continue;
    if (!from.empty()) {
      Result<addrinfo*> local = resolve(from, 0, true);
      if (!local) {
        freeaddrinfo(*res);
        return local.error();
      }
      int rc = ::bind(fd.get(), (*local)->ai_addr, (*local)->ai_addrlen);
      freeaddrinfo(*local);
      if (rc != 0) {
        last = errno_text(("bind to " + from).c_str());
        continue;
      }
    }
    if (::connect(fd.get(), ai->ai_addr, ai->ai_addrlen) == 0 || errno == EINPROGRESS) {
      freeaddrinfo(*res);
      return fd;
    }
    last = errno_text("connect");
  }
  freeaddrinfo(*res);
  return Error{"cannot connect to " + to.str() + ": " + last};
}

Result<bool> connect_done(int fd) {
  pollfd p{fd, POLLOUT, 0};
  int rc = ::poll(&p, 1, 0);
  if (rc < 0 && errno != EINTR) return Error{errno_text("poll")};
  if (rc <= 0) return false;
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err) return Error{std::string("connect: ") + std::strerror(err)};
  set_nodelay(fd);
  return true;
}

Result<Fd> connect_to(const Endpoint& to, Clock::time_point deadline, const std::string& from) {
  Result<addrinfo*> where = resolve(to.host, to.port, false);  // a wrong name fails now, not at the deadline
  if (!where) return where.error();
  freeaddrinfo(*where);
  while (true) {
    Result<Fd> fd = start_connect(to, from);
    std::string last = fd ? "" : fd.error().message;
    if (fd) {
      Status ready = wait_for(fd->get(), POLLOUT, deadline, "connect");  // connected or failed
      Result<bool> done = ready ? connect_done(fd->get()) : Result<bool>(Error{ready.message()});
      if (done && *done) {
        int flags = ::fcntl(fd->get(), F_GETFL);
        ::fcntl(fd->get(), F_SETFL, flags & ~O_NONBLOCK);
        return fd;
      }
      last = "cannot connect to " + to.str() + ": " + (done ? "timed out" : done.error().message);
    }
    if (Clock::now() >= deadline) return Error{last};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the peer may start later
  }
}

Result<Fd> accept_one(int listener, Clock::time_point deadline) {
  if (Status st = wait_for(listener, POLLIN, deadline, "accept"); !st) return Error{st.message()};
  Fd fd(::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd) return Error{errno_text("accept")};
  set_nodelay(fd.get());
  return fd;
}

Status send_all(int fd, const void* data, size_t bytes, Clock::time_point deadline) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n, bytes -= size_t(n);
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Error{errno_text("send")};
    if (Status st = wait_for(fd, POLLOUT, deadline, "send"); !st) return st;
  }
  return Status::Ok();
}

Status recv_all(int fd, void* data, size_t bytes, Clock::time_point deadline) {
  char* p = static_cast<char*>(data);
  while (bytes > 0) {
    ssize_t n = ::recv(fd, p, bytes, MSG_DONTWAIT);
    if (n > 0) {
      p += n, bytes -= size_t(n);
      continue;
    }
    if (n == 0) return Error{"connection closed by peer"};
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return Error{errno_text("recv")};
    if (Status st = wait_for(fd, POLLIN, deadline, "receive"); !st) return st;
  }
  return Status::Ok();
}

namespace {

Endpoint endpoint_of(const sockaddr_storage& ss) {
  char host[INET6_ADDRSTRLEN] = "?";
  uint16_t port = 0;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
  }
  return {host, port};
}

}  // namespace

Endpoint peer_endpoint(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {"?", 0};
  return endpoint_of(ss);
}

Endpoint local_endpoint(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return {"?", 0};
  return endpoint_of(ss);
}

Status set_nonblocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) return Error{errno_text("fcntl")};
  return Status::Ok();
}

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace xm::ccl::net
