#include "util/socket_address.h"

#include <cstdlib>

namespace xm {

std::string SocketAddress::str() const {
  return (host.find(':') != std::string::npos ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Result<SocketAddress> parse_socket_address(const std::string& text) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon + 1 == text.size())
    return Error{"\"" + text + "\" is not host:port"};
  std::string host = text.substr(0, colon), port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  char* end = nullptr;
  long p = std::strtol(port.c_str(), &end, 10);
  if (*end || p < 0 || p > 65535) return Error{"\"" + text + "\": port must be 0 to 65535"};
  return SocketAddress{host, uint16_t(p)};
}

}  // namespace xm
