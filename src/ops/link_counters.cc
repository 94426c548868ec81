#include "ops/link_counters.h"

#include <linux/if.h>
#include <linux/gen_stats.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
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
  c.ifindex = info->ifi_index;
  c.flags = info->ifi_flags;
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

// A root qdisc's drops (its queue was full: congestion, as a switch's output discards)
// and, for tbf, its rate; by interface index.
void parse_qdisc(const nlmsghdr* h, std::vector<LinkCounters>& links) {
  const auto* tc = static_cast<const tcmsg*>(NLMSG_DATA(h));
  if (tc->tcm_parent != TC_H_ROOT) return;
  int len = int(h->nlmsg_len) - int(NLMSG_LENGTH(sizeof(tcmsg)));
  bool tbf = false;
  uint64_t rate_bytes = 0, drops = 0;
  for (const rtattr* a = reinterpret_cast<const rtattr*>(reinterpret_cast<const char*>(tc) + NLMSG_ALIGN(sizeof(tcmsg)));
       RTA_OK(a, len); a = RTA_NEXT(a, len)) {
    if (a->rta_type == TCA_KIND) tbf = std::strncmp(static_cast<const char*>(RTA_DATA(a)), "tbf", RTA_PAYLOAD(a)) == 0;
    if (a->rta_type == TCA_STATS2) {
      int inner = int(RTA_PAYLOAD(a));
      for (const rtattr* o = static_cast<const rtattr*>(RTA_DATA(a)); RTA_OK(o, inner); o = RTA_NEXT(o, inner))
        if (o->rta_type == TCA_STATS_QUEUE && RTA_PAYLOAD(o) >= sizeof(gnet_stats_queue)) {
          gnet_stats_queue q{};
          std::memcpy(&q, RTA_DATA(o), sizeof q);
          drops = q.drops;
        }
    }
    if (a->rta_type != TCA_OPTIONS) continue;
    int inner = int(RTA_PAYLOAD(a));
    for (const rtattr* o = static_cast<const rtattr*>(RTA_DATA(a)); RTA_OK(o, inner); o = RTA_NEXT(o, inner)) {
      if (o->rta_type == TCA_TBF_PARMS && RTA_PAYLOAD(o) >= sizeof(tc_tbf_qopt) && rate_bytes == 0) {
        tc_tbf_qopt q{};
        std::memcpy(&q, RTA_DATA(o), sizeof q);
        rate_bytes = q.rate.rate;
      }
      if (o->rta_type == TCA_TBF_RATE64 && RTA_PAYLOAD(o) >= 8) std::memcpy(&rate_bytes, RTA_DATA(o), 8);  // past 4 GB/s
    }
  }
  for (LinkCounters& l : links)
    if (l.ifindex == tc->tcm_ifindex) {
      l.queue_drops = drops;
      if (tbf) l.speed_bps = rate_bytes * 8;
    }
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

template <typename Request, typename Parse>
Status LinkCounterReader::dump(Request& req, uint16_t answer_type, const char* what, Parse&& parse) {
  req.h.nlmsg_len = sizeof req;
  req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  req.h.nlmsg_seq = ++seq_;
  if (::send(fd_, &req, sizeof req, 0) < 0) return Error{std::string("netlink ") + what + ": " + std::strerror(errno)};
  alignas(nlmsghdr) char buf[32768];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{std::string("netlink ") + what + " reply: " + (n < 0 ? std::strerror(errno) : "closed")};
    // (by hand rather than NLMSG_OK, which compares signed with unsigned)
    for (size_t at = 0; at + sizeof(nlmsghdr) <= size_t(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buf + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > size_t(n)) break;
      at += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_seq != seq_) continue;  // a late answer to an earlier, timed-out request
      if (h->nlmsg_type == NLMSG_DONE) return Status::Ok();
      if (h->nlmsg_type == NLMSG_ERROR) return Error{std::string("netlink ") + what + ": the kernel refused the dump"};
      if (h->nlmsg_type == answer_type) parse(h);
    }
  }
}

Result<std::vector<LinkCounters>> LinkCounterReader::read() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<LinkCounters> out;
  struct {
    nlmsghdr h;
    ifinfomsg i;
  } links{};
  links.h.nlmsg_type = RTM_GETLINK;
  links.i.ifi_family = AF_UNSPEC;
  if (Status s = dump(links, RTM_NEWLINK, "RTM_GETLINK", [&](const nlmsghdr* h) { parse_link(h, out); }); !s)
    return Error{s.message()};
  struct {
    nlmsghdr h;
    tcmsg t;
  } qdiscs{};
  qdiscs.h.nlmsg_type = RTM_GETQDISC;
  qdiscs.t.tcm_family = AF_UNSPEC;
  if (Status s = dump(qdiscs, RTM_NEWQDISC, "RTM_GETQDISC", [&](const nlmsghdr* h) { parse_qdisc(h, out); }); !s)
    return Error{s.message()};
  return out;
}

}  // namespace xm::ops
