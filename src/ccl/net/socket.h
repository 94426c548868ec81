// Small, blocking-with-deadline TCP helpers for the bootstrap, and the non-blocking
// setup the data transport builds on. Errors are values; no call waits past its deadline.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "util/result.h"
#include "util/socket_address.h"

namespace xm::ccl::net {

using Clock = std::chrono::steady_clock;

// A socket address as people write it (util/socket_address.h).
using Endpoint = SocketAddress;
inline Result<Endpoint> parse_endpoint(const std::string& text) { return parse_socket_address(text); }

// An owned file descriptor, closed on destruction.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.release()) {}
  Fd& operator=(Fd&& o) noexcept;
  ~Fd();
  int get() const { return fd_; }
  int release() { int f = fd_; fd_ = -1; return f; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Listens on host:port (port 0: any); returns the socket and the port it got.
Result<Fd> listen_on(const std::string& host, uint16_t port, uint16_t* bound_port);
// Connects, retrying refused connections until the deadline (the peer may start later).
// A non-empty `from` binds the local end to that address first (rail affinity).
Result<Fd> connect_to(const Endpoint& to, Clock::time_point deadline, const std::string& from = "");
// The same in two steps for a caller that must not block: a non-blocking socket whose
// connect is under way (or done), then whether it is done (false: not yet; Error: failed).
Result<Fd> start_connect(const Endpoint& to, const std::string& from = "");
Result<bool> connect_done(int fd);
// Accepts one connection, or an Error at the deadline.
Result<Fd> accept_one(int listener, Clock::time_point deadline);

// Whole-buffer I/O that gives up at the deadline or on a closed peer.
Status send_all(int fd, const void* data, size_t bytes, Clock::time_point deadline);
Status recv_all(int fd, void* data, size_t bytes, Clock::time_point deadline);

// Who is at the other end of a connected socket, and this end ({"?", 0} when it cannot be told).
Endpoint peer_endpoint(int fd);
Endpoint local_endpoint(int fd);

// Waits until fd is ready for `events` (POLLIN, POLLOUT) or the deadline passes.
Status wait_for(int fd, short events, Clock::time_point deadline, const char* what);

Status set_nonblocking(int fd);
void set_nodelay(int fd);

}  // namespace xm::ccl::net
