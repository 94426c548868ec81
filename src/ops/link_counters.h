// Every interface's state and counters in one netlink dump (RTM_GETLINK, as `ip -s link`
// reads them): operational state, carrier changes, MTU and the 64-bit packet, byte,
// error and drop counters. The socket belongs to the network namespace it was opened in,
// so an agent opens it on the host it watches and may read it from any thread.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "util/result.h"

namespace xm::ops {

struct LinkCounters {
  std::string name;
  std::string operstate;  // "up", "down", "lowerlayerdown", ... as `ip link` prints it
  bool admin_up = false;  // IFF_UP
  bool carrier = false;   // IFF_LOWER_UP
  uint32_t mtu = 0;
  uint64_t carrier_changes = 0;
  uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
};

class LinkCounterReader {
 public:
  // Opens a netlink socket in the calling thread's network namespace.
  static Result<LinkCounterReader> open();
  LinkCounterReader(LinkCounterReader&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
  LinkCounterReader& operator=(LinkCounterReader&&) = delete;
  ~LinkCounterReader();

  // Every interface but loopback, in kernel order. Thread-safe.
  Result<std::vector<LinkCounters>> read();

 private:
  explicit LinkCounterReader(int fd) : fd_(fd) {}
  int fd_ = -1;
  uint32_t seq_ = 0;
  std::mutex mu_;
};

}  // namespace xm::ops
