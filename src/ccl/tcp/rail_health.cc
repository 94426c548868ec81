#include "ccl/tcp/rail_health.h"

#include <linux/tcp.h>  // the kernel's tcp_info: glibc's lacks tcpi_notsent_bytes and tcpi_snd_wnd
#include <netinet/in.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <string>

namespace xm::ccl {

Result<RailSample> sample_rail(int fd) {
  tcp_info info{};
  socklen_t len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0)
    return Error{std::string("TCP_INFO: ") + std::strerror(errno)};
  RailSample s;
  s.connected = true;
  // Data the kernel holds back although the peer's window is open cannot leave: the rail's
  // own NIC lost its carrier and its route went with it, so nothing is ever in flight.
  // (Held back by a closed window is a peer that is not reading: not this rail's fault.)
  // A kernel too old to report them (len short of them): only what is in flight counts.
  bool cannot_leave = len >= offsetof(tcp_info, tcpi_snd_wnd) + sizeof info.tcpi_snd_wnd && info.tcpi_notsent_bytes > 0 &&
                      info.tcpi_snd_wnd > 0;
  s.in_flight = info.tcpi_unacked > 0 || cannot_leave;
  s.ms_since_ack = info.tcpi_last_ack_recv;
  return s;
}

void InFlightWatch::observe(RailSample& s, std::chrono::steady_clock::time_point now) {
  if (!s.connected || !s.in_flight) return reset();
  if (!watching_) watching_ = true, since_ = now;
  auto seen = std::chrono::duration_cast<std::chrono::milliseconds>(now - since_).count();
  if (uint64_t(seen) < s.ms_since_ack) s.ms_since_ack = uint32_t(seen);
}

namespace {

bool silent(const RailSample& s, std::chrono::milliseconds stall) {
  return s.connected && s.in_flight && s.ms_since_ack >= uint64_t(stall.count());
}

bool heard_from_peer(std::span<const RailSample> rails, size_t except, std::chrono::milliseconds stall) {
  for (size_t s = 0; s < rails.size(); ++s)
    if (s != except && rails[s].connected && rails[s].ms_since_ack < uint64_t(stall.count() / 2)) return true;
  return false;
}

}  // namespace

std::vector<size_t> silent_rails(std::span<const RailSample> rails, std::chrono::milliseconds stall) {
  std::vector<size_t> dead;
  for (size_t r = 0; r < rails.size(); ++r)
    if (silent(rails[r], stall) && heard_from_peer(rails, r, stall)) dead.push_back(r);
  return dead;
}

bool suspect_a_rail(std::span<const RailSample> rails, std::chrono::milliseconds stall) {
  for (const RailSample& s : rails)
    if (silent(s, stall / 2)) return true;
  return false;
}

}  // namespace xm::ccl
