// Which interface a network namespace's kernel forwards a packet out of, asked over
// rtnetlink: RTM_GETROUTE with the input interface, protocol and ports, what
// `ip route get DST from SRC iif IN ipproto udp sport S dport D` asks, on one socket per
// namespace instead of a process per batch. The kernel takes the input path with the
// packet's ports, so a multipath route answers with the next hop its hash picks for that
// 5-tuple (fib_multipath_hash_policy): the path a probe takes. A question the kernel
// cannot answer (input interface down or gone, no route) answers "" and costs no more
// than one that it can: a switch whose ports are all down is asked as fast as any.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/ipv4.h"
#include "util/result.h"

namespace xm::ops {

struct RouteQuery {
  Ipv4 src, dst;
  std::string in_port;  // the interface the packet arrives on (a ToR's bridge, for its hosts)
  uint16_t sport = 0, dport = 0;
};

class RouteAsker {
 public:
  // A netlink socket in network namespace `netns` (a name under /run/netns; "": the
  // calling thread's), which stays there whichever thread uses it.
  static Result<RouteAsker> open(const std::string& netns);
  RouteAsker(RouteAsker&& other) noexcept;
  RouteAsker& operator=(RouteAsker&&) = delete;
  ~RouteAsker();

  // The out interface for each query, in order; "" where there is no route.
  Result<std::vector<std::string>> ask(const std::vector<RouteQuery>& queries);

 private:
  explicit RouteAsker(int fd) : fd_(fd) {}
  Status read_interfaces();
  Result<std::string> ask(const RouteQuery& query);
  int fd_ = -1;
  uint32_t seq_ = 0;
  std::map<std::string, int> index_;  // interfaces by name, and back
  std::map<int, std::string> name_;
};

}  // namespace xm::ops
