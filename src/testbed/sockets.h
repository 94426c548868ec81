// What the probe and the reachability check share: an owned file descriptor, and an
// IPv4 socket address from text.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace xm::testbed {

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  Fd& operator=(Fd&& o) noexcept {
    std::swap(fd_, o.fd_);
    return *this;
  }
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

inline sockaddr_in ipv4_socket_address(const std::string& address, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, address.c_str(), &a.sin_addr);
  return a;
}

}  // namespace xm::testbed
