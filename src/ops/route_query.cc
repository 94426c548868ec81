#include "ops/route_query.h"

#include <arpa/inet.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "ops/link_counters.h"
#include "testbed/system.h"

namespace xm::ops {
namespace {

// A route request: the header, the message and room for its six attributes.
struct Request {
  nlmsghdr h;
  rtmsg r;
  alignas(NLMSG_ALIGNTO) char attrs[128];
};

template <typename T>
void attribute(Request& req, uint16_t type, T value) {
  auto* a = reinterpret_cast<rtattr*>(reinterpret_cast<char*>(&req) + NLMSG_ALIGN(req.h.nlmsg_len));
  a->rta_type = type;
  a->rta_len = uint16_t(RTA_LENGTH(sizeof value));
  std::memcpy(RTA_DATA(a), &value, sizeof value);
  req.h.nlmsg_len = uint32_t(NLMSG_ALIGN(req.h.nlmsg_len) + RTA_ALIGN(a->rta_len));
}

}  // namespace

Result<RouteAsker> RouteAsker::open(const std::string& netns) {
  std::optional<testbed::NetnsGuard> in;  // until the socket and the interfaces' names are read
  if (!netns.empty()) {
    Result<testbed::NetnsGuard> entered = testbed::NetnsGuard::enter(netns);
    if (!entered) return entered.error();
    in.emplace(std::move(entered).value());
  }
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Error{"netlink socket" + (netns.empty() ? std::string() : " in " + netns) + ": " + std::strerror(errno)};
  timeval tv{1, 0};  // the kernel answers at once; never wait for good
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  RouteAsker asker(fd);
  if (Status s = asker.read_interfaces(); !s) return Error{s.message() + (netns.empty() ? "" : " in " + netns)};
  return asker;
}

RouteAsker::RouteAsker(RouteAsker&& other) noexcept
    : fd_(other.fd_), seq_(other.seq_), index_(std::move(other.index_)), name_(std::move(other.name_)) {
  other.fd_ = -1;
}

RouteAsker::~RouteAsker() {
  if (fd_ >= 0) ::close(fd_);
}

Status RouteAsker::read_interfaces() {
  // The link dump reads the namespace this thread is in: where the socket was just opened.
  Result<LinkCounterReader> links = LinkCounterReader::open();
  if (!links) return Error{links.error().message};
  Result<std::vector<LinkCounters>> all = links->read();
  if (!all) return Error{all.error().message};
  for (const LinkCounters& l : *all) index_[l.name] = l.ifindex, name_[l.ifindex] = l.name;
  return Status::Ok();
}

Result<std::vector<std::string>> RouteAsker::ask(const std::vector<RouteQuery>& queries) {
  std::vector<std::string> out;
  out.reserve(queries.size());
  for (const RouteQuery& q : queries) {
    Result<std::string> port = ask(q);
    if (!port) return port.error();
    out.push_back(std::move(port).value());
  }
  return out;
}

Result<std::string> RouteAsker::ask(const RouteQuery& q) {
  auto in = index_.find(q.in_port);
  if (in == index_.end()) return std::string();  // no such interface: nothing arrives on it
  Request req{};
  req.h.nlmsg_len = NLMSG_LENGTH(sizeof(rtmsg));
  req.h.nlmsg_type = RTM_GETROUTE;
  req.h.nlmsg_flags = NLM_F_REQUEST;
  req.h.nlmsg_seq = ++seq_;
  req.r.rtm_family = AF_INET;
  req.r.rtm_dst_len = req.r.rtm_src_len = 32;
  attribute(req, RTA_DST, htonl(q.dst.value));
  attribute(req, RTA_SRC, htonl(q.src.value));
  attribute(req, RTA_IIF, uint32_t(in->second));
  attribute(req, RTA_IP_PROTO, uint8_t(IPPROTO_UDP));
  attribute(req, RTA_SPORT, htons(q.sport));
  attribute(req, RTA_DPORT, htons(q.dport));
  if (::send(fd_, &req, req.h.nlmsg_len, 0) < 0) return Error{std::string("netlink RTM_GETROUTE: ") + std::strerror(errno)};
  alignas(nlmsghdr) char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Error{"netlink RTM_GETROUTE reply: " + (n < 0 ? std::string(std::strerror(errno)) : std::string("closed"))};
    for (size_t at = 0; at + sizeof(nlmsghdr) <= size_t(n);) {
      const auto* h = reinterpret_cast<const nlmsghdr*>(buf + at);
      if (h->nlmsg_len < sizeof(nlmsghdr) || at + h->nlmsg_len > size_t(n)) break;
      at += NLMSG_ALIGN(h->nlmsg_len);
      if (h->nlmsg_seq != seq_) continue;  // a late answer to an earlier, timed-out request
      if (h->nlmsg_type == NLMSG_ERROR) return std::string();  // unroutable: the kernel's errno
      if (h->nlmsg_type != RTM_NEWROUTE) continue;
      const auto* r = static_cast<const rtmsg*>(NLMSG_DATA(h));
      int len = int(RTM_PAYLOAD(h));
      for (const rtattr* a = RTM_RTA(r); RTA_OK(a, len); a = RTA_NEXT(a, len))
        if (a->rta_type == RTA_OIF && RTA_PAYLOAD(a) >= 4) {
          int oif = 0;
          std::memcpy(&oif, RTA_DATA(a), 4);
          auto name = name_.find(oif);
          return name == name_.end() ? std::string() : name->second;
        }
      return std::string();
    }
  }
}

}  // namespace xm::ops
