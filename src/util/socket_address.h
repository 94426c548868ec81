// A socket address as people write it: "10.0.0.1:29500", "[::1]:29500", "host:port"
// (port 0: any). The collective library's bootstrap and the agents' endpoints read the
// same form.
#pragma once

#include <cstdint>
#include <string>

#include "util/result.h"

namespace xm {

struct SocketAddress {
  std::string host;
  uint16_t port = 0;
  std::string str() const;  // brackets an IPv6 host
};

Result<SocketAddress> parse_socket_address(const std::string& text);

}  // namespace xm
