#include "testbed/reach.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "testbed/sockets.h"
#include "testbed/system.h"

namespace xm::testbed {
namespace {

constexpr uint16_t kPort = 47807;

struct Attempt {
  const HostPlan* from_host;
  const NicPlan* from;
  const HostPlan* to_host;
  const NicPlan* to;
  Fd socket;
};

std::string pair_name(const Attempt& a) {
  return a.from_host->name + "/" + a.from->ifname + " (" + a.from->address + ") -> " + a.to_host->name + "/" +
         a.to->ifname + " (" + a.to->address + ")";
}

}  // namespace

Result<ReachReport> check_reach(const Plan& plan, double timeout_s) {
  if (!is_root()) return root_required();
  rlimit files{};
  ::getrlimit(RLIMIT_NOFILE, &files);
  files.rlim_cur = files.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &files);

  // A listener on every NIC's address, in its host's namespace (sockets stay there).
  // Each accepts what arrives and closes it: the handshake is the test.
  std::vector<Fd> listeners;
  for (const HostPlan& h : plan.hosts) {
    Result<NetnsGuard> in = NetnsGuard::enter(h.netns);
    if (!in) return Error{in.error().message};
    for (const NicPlan& n : h.nics) {
      Fd s(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      int one = 1;
      ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a = ipv4_socket_address(n.address, kPort);
      if (::bind(s.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.get(), 4096) != 0)
        return Error{"listening on " + h.name + "/" + n.ifname + " (" + n.address + "): " + std::strerror(errno)};
      listeners.push_back(std::move(s));
    }
  }

  ReachReport report;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  // One source host at a time, a window of handshakes in flight: a burst of a thousand
  // first packets overflows the neighbour tables' queues while ARP resolves, and the
  // check would measure that instead of the routing.
  constexpr size_t kInFlight = 32;
  for (const HostPlan& src : plan.hosts) {
    Result<NetnsGuard> in = NetnsGuard::enter(src.netns);
    if (!in) return Error{in.error().message};
    std::vector<Attempt> todo;
    for (const NicPlan& from : src.nics)
      for (const HostPlan& dst : plan.hosts) {
        if (dst.index == src.index) continue;
        for (const NicPlan& to : dst.nics) {
          todo.push_back(Attempt{&src, &from, &dst, &to, Fd()});
          ++report.pairs;
          report.same_rail += from.rail == to.rail;
        }
      }
    size_t next = 0;
    std::vector<Attempt*> open;
    while (next < todo.size() || !open.empty()) {
      while (open.size() < kInFlight && next < todo.size()) {
        Attempt& a = todo[next++];
        a.socket = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        sockaddr_in local = ipv4_socket_address(a.from->address, 0), remote = ipv4_socket_address(a.to->address, kPort);
        if (a.socket.get() < 0 || ::bind(a.socket.get(), reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
            (::connect(a.socket.get(), reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0 && errno != EINPROGRESS)) {
          report.failures.push_back(pair_name(a) + ": " + std::strerror(errno));
          a.socket = Fd();
        } else {
          open.push_back(&a);
        }
      }
      if (open.empty()) continue;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        for (Attempt* a : open) report.failures.push_back(pair_name(*a) + ": no answer within the timeout");
        for (size_t k = next; k < todo.size(); ++k) report.failures.push_back(pair_name(todo[k]) + ": not tried (timeout)");
        return report;
      }
      // The listeners too: what they accepted is closed at once, so their queues never fill.
      std::vector<pollfd> fds;
      for (Attempt* a : open) fds.push_back({a->socket.get(), POLLOUT, 0});
      for (const Fd& l : listeners) fds.push_back({l.get(), POLLIN, 0});
      ::poll(fds.data(), fds.size(), int(std::min<int64_t>(left.count(), 100)));
      for (size_t k = open.size(); k < fds.size(); ++k)
        if (fds[k].revents)
          for (int c; (c = ::accept4(fds[k].fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) ::close(c);
      std::vector<Attempt*> still;
      for (size_t k = 0; k < open.size(); ++k) {
        if (!fds[k].revents) {
          still.push_back(open[k]);
          continue;
        }
        int error = 0;
        socklen_t len = sizeof error;
        ::getsockopt(fds[k].fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error) report.failures.push_back(pair_name(*open[k]) + ": " + std::strerror(error));
        open[k]->socket = Fd();  // closed: its file descriptor back
      }
      open.swap(still);
    }
  }
  return report;
}

}  // namespace xm::testbed
