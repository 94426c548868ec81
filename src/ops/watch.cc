#include "ops/watch.h"

#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <set>

#include "ops/collect.h"
#include "testbed/system.h"

namespace xm::ops {
namespace {

using Clock = std::chrono::steady_clock;

std::set<std::string> failed_ports(const Report& r) {
  std::set<std::string> out;
  for (const PortReport& p : r.ports)
    if (!p.pass()) out.insert(p.device + ":" + p.port + ":" + (p.problems.empty() ? "" : p.problems.front()));
  return out;
}

// A netlink socket in `netns` that hears every link change there.
Result<int> link_events(const std::string& netns) {
  Result<testbed::NetnsGuard> in = testbed::NetnsGuard::enter(netns);
  if (!in) return in.error();
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);
  if (fd < 0) return Error{netns + ": netlink socket: " + std::to_string(errno)};
  sockaddr_nl a{};
  a.nl_family = AF_NETLINK;
  a.nl_groups = RTMGRP_LINK;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return Error{netns + ": netlink bind failed"};
  }
  return fd;
}

}  // namespace

Status watch(const testbed::Plan& testbed, const FabricPlan& plan, const WatchOptions& options,
             const std::function<bool(const Report&, double)>& on_change) {
  std::vector<pollfd> fds;
  for (const std::string& ns : testbed.namespaces()) {
    Result<int> fd = link_events(ns);
    if (!fd) {
      for (pollfd& p : fds) ::close(p.fd);
      return Error{fd.error().message};
    }
    fds.push_back({*fd, POLLIN, 0});
  }
  const auto start = Clock::now();
  auto since = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  std::set<std::string> last;
  bool first = true;
  Clock::time_point settle_until = start;
  Status result;
  for (;;) {
    Result<Observation> seen = collect_testbed(testbed);
    if (!seen) {
      result = Error{seen.error().message};
      break;
    }
    Report report = validate(plan, *seen);
    std::set<std::string> now = failed_ports(report);
    if ((first || now != last) && !on_change(report, since())) break;
    first = false;
    last = std::move(now);
    if (options.seconds > 0 && since() >= options.seconds) break;
    double wait = Clock::now() < settle_until ? options.interval_s : options.idle_interval_s;
    if (options.seconds > 0) wait = std::min(wait, std::max(0.0, options.seconds - since()));
    if (::poll(fds.data(), fds.size(), int(wait * 1000)) > 0) {
      char buf[8192];
      for (pollfd& p : fds)
        while (::recv(p.fd, buf, sizeof buf, 0) > 0) {
        }
      settle_until = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.settle_s));
    }
  }
  for (pollfd& p : fds) ::close(p.fd);
  return result;
}

}  // namespace xm::ops
