// Every interface's state and counters in one netlink dump (RTM_GETLINK, as `ip -s link`
// reads them): operational state, flags, carrier changes, MTU and the 64-bit packet,
// byte, error and drop counters; and from a second dump (RTM_GETQDISC) the root qdisc's
// drops (a full queue: congestion) and the speed: the rate of a token-bucket (tbf) root qdisc, which is what a shaped link — every testbed
// cable — runs at. (A NIC's negotiated speed would come from ethtool; veths have none.) The socket belongs to the network namespace it was opened in,
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
  int ifindex = 0;
  uint32_t flags = 0;     // IFF_*, as node_exporter's node_network_flags
  std::string operstate;  // "up", "down", "lowerlayerdown", ... as `ip link` prints it
  bool admin_up = false;  // IFF_UP
  bool carrier = false;   // IFF_LOWER_UP
  uint32_t mtu = 0;
  uint64_t speed_bps = 0;  // bits per second; 0: not shaped
  uint64_t carrier_changes = 0;
  uint64_t rx_bytes = 0, rx_packets = 0, rx_errors = 0, rx_dropped = 0;
  uint64_t tx_bytes = 0, tx_packets = 0, tx_errors = 0, tx_dropped = 0;
  uint64_t queue_drops = 0;  // the root qdisc's: packets it dropped with its queue full
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
  // Sends a dump request of `type` and hands every answer of `answer_type` to `parse`.
  template <typename Request, typename Parse>
  Status dump(Request& request, uint16_t answer_type, const char* what, Parse&& parse);
  int fd_ = -1;
  uint32_t seq_ = 0;
  std::mutex mu_;
};

}  // namespace xm::ops
