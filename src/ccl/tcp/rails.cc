#include "ccl/tcp/rails.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "ccl/net/socket.h"

namespace xm::ccl {
namespace {

constexpr const char* kSpare = "/spare";

bool strip_spare(std::string& item) {
  size_t n = std::strlen(kSpare);
  if (item.size() < n || item.compare(item.size() - n, n, kSpare) != 0) return false;
  item.resize(item.size() - n);
  return true;
}

}  // namespace

Result<std::vector<Rail>> parse_rails(const std::string& text, const std::string& fallback_host) {
  std::vector<Rail> rails;
  if (text.empty()) return std::vector<Rail>{Rail{fallback_host, 0, 100}};
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    Rail r;
    r.spare = strip_spare(item);
    size_t at = item.find('@');
    r.host = item.substr(0, at);
    if (at != std::string::npos) {
      char* end = nullptr;
      r.gbps = std::strtod(item.c_str() + at + 1, &end);
      if (*end || !(r.gbps > 0)) return Error{"XCCL_RAILS: \"" + item + "\": expected address@Gbit/s with a positive speed"};
    }
    if (r.host.empty()) return Error{"XCCL_RAILS: \"" + item + "\": empty address"};
    rails.push_back(r);
  }
  if (rails.empty() || rails.size() > kMaxRails) return Error{"XCCL_RAILS: expected 1 to " + std::to_string(kMaxRails) + " rails"};
  return rails;
}

Result<std::vector<Rail>> with_sockets_per_rail(const std::vector<Rail>& rails, uint32_t sockets) {
  if (sockets <= 1) return rails;
  if (rails.size() * sockets > kMaxRails)
    return Error{"XCCL_TCP_SOCKETS_PER_RAIL=" + std::to_string(sockets) + " with " + std::to_string(rails.size()) +
                 " rails: " + std::to_string(rails.size() * sockets) + " connections per peer, at most " + std::to_string(kMaxRails)};
  std::vector<Rail> out;
  for (const Rail& r : rails)
    for (uint32_t j = 0; j < sockets; ++j) {
      Rail share = r;
      share.gbps = r.gbps / double(sockets);
      out.push_back(share);
    }
  return out;
}

std::string encode_rails(const std::vector<Rail>& rails) {
  std::string out;
  for (const Rail& r : rails) {
    std::ostringstream g;
    g << r.gbps;
    out += (out.empty() ? "" : ",") + net::Endpoint{r.host, r.port}.str() + "@" + g.str() + (r.spare ? kSpare : "");
  }
  return out;
}

Result<std::vector<Rail>> decode_rails(const std::string& text) {
  std::vector<Rail> rails;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    bool spare = strip_spare(item);
    size_t at = item.rfind('@');
    if (at == std::string::npos) return Error{"malformed rail \"" + item + "\""};
    Result<net::Endpoint> e = net::parse_endpoint(item.substr(0, at));
    if (!e) return e.error();
    rails.push_back(Rail{e->host, e->port, std::strtod(item.c_str() + at + 1, nullptr), spare});
  }
  if (rails.empty()) return Error{"no rails"};
  return rails;
}

}  // namespace xm::ccl
