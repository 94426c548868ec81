#include "ops/link_counters.h"

#include <linux/if.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace xm::ops {
namespace {

const char* operstate_name(uint8_t state) {
  switch (state) {  // RFC 2863, as the kernel numbers them (IF_OPER_*)
    case IF_OPER_NOTPRESENT: return "notpresent";
    case IF_OPER_DOWN: return "down";
    case IF_OPER_LOWERLAYERDOWN: return "lowerlayerdown";
    case IF_OPER_TESTING: return "testing";
    case IF_OPER_DORMANT: return "dormant";
    case IF_OPER_UP: return "up";
    default: return "unknown";
  }
}

void parse_link(const nlmsghdr* h, std::vector<LinkCounters>& out) {
  const auto* info = static_cast<const ifinfomsg*>(NLMSG_DATA(h));
  if (info->ifi_flags & IFF_LOOPBACK) return;
  LinkCounters c;
  c.admin_up = info->ifi_flags & IFF_UP;
  c.carrier = info->ifi_flags & IFF_LOWER_UP;
  int len = int(IFLA_PAYLOAD(h));
  for (const rtattr* a = IFLA_RTA(info); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    const void* data = RTA_DATA(a);
    const size_t bytes = RTA_PAYLOAD(a);
    switch (a->rta_type) {
      case IFLA_IFNAME: c.name.assign(static_cast<const char*>(data), strnlen(static_cast<const char*>(data), bytes)); break;
      case IFLA_MTU: if (bytes >= 4) std::memcpy(&c.mtu, data, 4); break;
      case IFLA_OPERSTATE: if (bytes >= 1) c.operstate = operstate_name(*static_cast<const uint8_t*>(data)); break;
      case IFLA_CARRIER_CHANGES: {
        uint32_t v = 0;
        if (bytes >= 4) std::memcpy(&v, data, 4);
        c.carrier_changes = v;
        break;
      }
      case IFLA_STATS64: {
        rtnl_link_stats64 s{};
        std::memcpy(&s, data, std::min(bytes, sizeof s));
        c.rx_bytes = s.rx_bytes, c.rx_packets = s.rx_packets, c.rx_errors = s.rx_errors, c.rx_dropped = s.rx_dropped;
        c.tx_bytes = s.tx_bytes, c.tx_packets = s.tx_packets, c.tx_errors = s.tx_errors, c.tx_dropped = s.tx_dropped;
        break;
      }
      default: break;
    }
  }
  if (!c.name.empty()) out.push_back(std::move(c));
}

}  // namespace

Result<LinkCounterReader> LinkCounterReader::open() {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Error{std::string("netlink socket: ") + std::strerror(errno)};
  timeval tv{1, 0};  // the kernel answers at once; never wait for good
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return LinkCounterReader(fd);
}

LinkCounterReader::~LinkCounterReader() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<LinkCounters>> LinkCounterReader::read() {
  std::lock_guard<std::mutex> lock(mu_);
  struct {
    nlmsghdr h;
    ifinfomsg i;
  } req{};
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_type = RTM_GETLINK;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = ++seq_;
  req.i.ifi_family = AF_UNSPEC;
  if (::send(fd_, &req, sizeof req, 0) < 0) return Error{std::string("netlink RTM_GETLINK: ") + std::strerror(errno)};
  std::vector<LinkCounters> out;
  alignas(nlmsghdr) char buf[32768];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{std::string("netlink RTM_GETLINK reply: ") + (n < 0 ? std::strerror(errno) : "closed")};
    // (by hand rather than NLMSG_OK, which compares signed with unsigned)
    for (size_t at = 0; at + sizeof(nlmsghdr) <= size_t(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buf + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > size_t(n)) break;
      at += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_seq != seq_) continue;  // a late answer to an earlier, timed-out request
      if (h->nlmsg_type == NLMSG_DONE) return out;
      if (h->nlmsg_type == NLMSG_ERROR) return Error{"netlink RTM_GETLINK: the kernel refused the dump"};
      if (h->nlmsg_type == RTM_NEWLINK) parse_link(h, out);
    }
  }
}

}  // namespace xm::ops
