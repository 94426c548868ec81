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

#include "testbed/system.h"

namespace xm::testbed {
namespace {

constexpr uint16_t kPort = 47807;

sockaddr_in address_of(const std::string& text, uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  ::inet_pton(AF_INET, text.c_str(), &a.sin_addr);
  return a;
}

struct Socket {
  int fd = -1;
  explicit Socket(int f) : fd(f) {}
  Socket(Socket&& o) noexcept : fd(o.fd) { o.fd = -1; }
  ~Socket() {
    if (fd >= 0) ::close(fd);
  }
};

struct Attempt {
  const HostPlan* from_host;
  const NicPlan* from;
  const HostPlan* to_host;
  const NicPlan* to;
  Socket socket;
  bool done = false;
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
  std::vector<Socket> listeners;
  for (const HostPlan& h : plan.hosts) {
    Result<NetnsGuard> in = NetnsGuard::enter(h.netns);
    if (!in) return Error{in.error().message};
    for (const NicPlan& n : h.nics) {
      Socket s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
      int one = 1;
      ::setsockopt(s.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
      sockaddr_in a = address_of(n.address, kPort);
      if (::bind(s.fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(s.fd, 4096) != 0)
        return Error{"listening on " + h.name + "/" + n.ifname + " (" + n.address + "): " + std::strerror(errno)};
      listeners.push_back(std::move(s));
    }
  }

  ReachReport report;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  // One source host at a time: its NICs to every NIC of every other host, all at once.
  for (const HostPlan& src : plan.hosts) {
    std::vector<Attempt> attempts;
    {
      Result<NetnsGuard> in = NetnsGuard::enter(src.netns);
      if (!in) return Error{in.error().message};
      for (const NicPlan& from : src.nics)
        for (const HostPlan& dst : plan.hosts) {
          if (dst.index == src.index) continue;
          for (const NicPlan& to : dst.nics) {
            Attempt a{&src, &from, &dst, &to, Socket(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0))};
            sockaddr_in local = address_of(from.address, 0), remote = address_of(to.address, kPort);
            ++report.pairs;
            report.same_rail += from.rail == to.rail;
            if (::bind(a.socket.fd, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 ||
                (::connect(a.socket.fd, reinterpret_cast<sockaddr*>(&remote), sizeof remote) != 0 &&
                 errno != EINPROGRESS)) {
              report.failures.push_back(pair_name(a) + ": " + std::strerror(errno));
              a.done = true;
            }
            attempts.push_back(std::move(a));
          }
        }
    }
    for (size_t open = attempts.size(); open > 0;) {
      std::vector<pollfd> fds;
      std::vector<Attempt*> which;
      for (Attempt& a : attempts)
        if (!a.done) fds.push_back({a.socket.fd, POLLOUT, 0}), which.push_back(&a);
      open = fds.size();
      if (open == 0) break;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) {
        for (Attempt* a : which) report.failures.push_back(pair_name(*a) + ": no answer within the timeout");
        break;
      }
      ::poll(fds.data(), fds.size(), int(std::min<int64_t>(left.count(), 100)));
      for (size_t k = 0; k < fds.size(); ++k) {
        if (!fds[k].revents) continue;
        int error = 0;
        socklen_t len = sizeof error;
        ::getsockopt(fds[k].fd, SOL_SOCKET, SO_ERROR, &error, &len);
        if (error) report.failures.push_back(pair_name(*which[k]) + ": " + std::strerror(error));
        which[k]->done = true;
      }
    }
  }
  return report;
}

}  // namespace xm::testbed
