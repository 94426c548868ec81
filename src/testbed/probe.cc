#include "testbed/probe.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <latch>
#include <nlohmann/json.hpp>
#include <thread>

#include "testbed/sockets.h"
#include "testbed/system.h"
#include "util/format.h"

namespace xm::testbed {
namespace {

using Clock = std::chrono::steady_clock;

std::string errno_text() { return std::strerror(errno); }

struct Endpoint {
  std::string netns, address;
};

// Waits for `events` on fd until the deadline; false on timeout or when `stop` is set.
bool wait_for(int fd, short events, Clock::time_point deadline, const std::atomic<bool>& stop) {
  for (;;) {
    if (stop) return false;
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 50)));
    if (n > 0) return true;
    if (n < 0 && errno != EINTR) return false;
  }
}

struct Flow {
  FlowSpec spec;
  Endpoint src, dst;
  Fd listener, sender;
  uint16_t port = 0;
  FlowResult result;
  std::string error;          // sender side
  std::string receive_error;  // receiver side
};

void receive(Flow& f, Clock::time_point deadline, std::atomic<bool>& stop) {
  if (!wait_for(f.listener.get(), POLLIN, deadline, stop)) {
    if (!stop) f.receive_error = "no connection arrived";
    return;
  }
  Fd conn(::accept4(f.listener.get(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (conn.get() < 0) return void(f.receive_error = "accept: " + errno_text());
  std::vector<char> buf(256 * 1024);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(conn.get(), buf.data(), buf.size());
    if (n > 0) {
      total += static_cast<uint64_t>(n);
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return void(f.receive_error = "receive: " + errno_text());
    if (!wait_for(conn.get(), POLLIN, deadline, stop)) {
      if (!stop) f.receive_error = "stalled after " + with_commas(total) + " bytes";
      return;
    }
  }
  uint64_t ack = total;
  if (::send(conn.get(), &ack, sizeof ack, MSG_NOSIGNAL) != sizeof ack) f.receive_error = "confirm: " + errno_text();
}

void send(Flow& f, uint64_t bytes, Clock::time_point deadline, std::atomic<bool>& stop) {
  auto fail = [&](std::string why) {
    f.error = std::move(why);
    stop = true;
  };
  int fd = f.sender.get();
  sockaddr_in to = ipv4_socket_address(f.dst.address, f.port);
  Clock::time_point start = Clock::now();
  if (::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0 && errno != EINPROGRESS)
    return fail("connect: " + errno_text());
  if (!wait_for(fd, POLLOUT, deadline, stop)) return fail("connect: no answer");
  int err = 0;
  socklen_t len = sizeof err;
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return fail(std::string("connect: ") + std::strerror(err));
  std::vector<char> buf(256 * 1024, 'x');
  uint64_t sent = 0;
  while (sent < bytes) {
    ssize_t n = ::send(fd, buf.data(), static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - sent)), MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<uint64_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN) return fail("send: " + errno_text());
    if (!wait_for(fd, POLLOUT, deadline, stop)) return fail("stalled after " + with_commas(sent) + " bytes sent");
  }
  ::shutdown(fd, SHUT_WR);
  uint64_t ack = 0;
  size_t got = 0;
  while (got < sizeof ack) {
    if (!wait_for(fd, POLLIN, deadline, stop)) return fail("no confirmation from the receiver");
    ssize_t n = ::read(fd, reinterpret_cast<char*>(&ack) + got, sizeof ack - got);
    if (n == 0) return fail("the receiver closed without confirming");
    if (n < 0 && errno != EINTR && errno != EAGAIN) return fail("confirmation: " + errno_text());
    if (n > 0) got += static_cast<size_t>(n);
  }
  if (ack != bytes) return fail("the receiver got " + with_commas(ack) + " of " + with_commas(bytes) + " bytes");
  f.result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  f.result.bytes = bytes;
}

// Opens the flow's listener and sender sockets, each in its own namespace.
Status open_sockets(Flow& f) {
  {
    Result<NetnsGuard> in = NetnsGuard::enter(f.dst.netns);
    if (!in) return Error{in.error().message};
    f.listener = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    int one = 1;
    ::setsockopt(f.listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a = ipv4_socket_address(f.dst.address, 0);
    if (::bind(f.listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(f.listener.get(), 1) != 0)
      return Error{"listen on " + f.dst.address + " in " + f.dst.netns + ": " + errno_text()};
    socklen_t len = sizeof a;
    ::getsockname(f.listener.get(), reinterpret_cast<sockaddr*>(&a), &len);
    f.port = ntohs(a.sin_port);
  }
  Result<NetnsGuard> in = NetnsGuard::enter(f.src.netns);
  if (!in) return Error{in.error().message};
  f.sender = Fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  sockaddr_in a = ipv4_socket_address(f.src.address, 0);
  if (::bind(f.sender.get(), reinterpret_cast<sockaddr*>(&a), sizeof a) != 0)
    return Error{"bind to " + f.src.address + " in " + f.src.netns + ": " + errno_text()};
  return Status::Ok();
}

}  // namespace

Result<std::vector<FlowResult>> probe(const Plan& plan, const std::vector<FlowSpec>& specs, uint64_t bytes,
                                      double timeout_s) {
  if (!is_root()) return root_required();
  if (specs.empty()) return Error{"no flow to probe"};
  std::vector<Flow> flows(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    Flow& f = flows[i];
    f.spec = specs[i];
    for (auto [name, end] : {std::pair{&f.spec.from, &f.src}, std::pair{&f.spec.to, &f.dst}}) {
      const HostPlan* host = nullptr;
      const NicPlan* nic = plan.find_nic(*name, &host);
      if (!nic)
        return Error{"testbed " + plan.name + " has no NIC \"" + *name + "\": expected h<0.." +
                     std::to_string(plan.hosts.size() - 1) + ">/nic<rail>"};
      *end = {host->netns, nic->address};
    }
    f.result = {f.spec.from, f.spec.to, f.src.address, f.dst.address, 0, 0};
    if (Status s = open_sockets(f); !s) return Error{s.message()};
  }

  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_s));
  std::atomic<bool> stop{false};
  std::latch ready(static_cast<std::ptrdiff_t>(flows.size()));
  std::vector<std::thread> threads;
  for (Flow& f : flows) {
    threads.emplace_back([&f, deadline, &stop] { receive(f, deadline, stop); });
    threads.emplace_back([&f, bytes, deadline, &stop, &ready] {
      ready.arrive_and_wait();  // all senders start together
      send(f, bytes, deadline, stop);
    });
  }
  for (std::thread& t : threads) t.join();

  std::string errors;
  std::vector<FlowResult> results;
  for (Flow& f : flows) {
    std::string why = !f.error.empty() ? f.error : f.receive_error;
    if (!why.empty())
      errors += (errors.empty() ? "" : "\n") + f.spec.from + " (" + f.src.address + ") -> " + f.spec.to + " (" +
                f.dst.address + "): " + why;
    results.push_back(f.result);
  }
  if (!errors.empty()) return Error{errors};
  return results;
}

std::string probe_json(const std::vector<FlowResult>& results) {
  nlohmann::json flows = nlohmann::json::array();
  double total = 0;
  for (const FlowResult& r : results) {
    flows.push_back({{"from", r.from},
                     {"to", r.to},
                     {"src", r.src},
                     {"dst", r.dst},
                     {"bytes", r.bytes},
                     {"seconds", r.seconds},
                     {"mbit_per_s", r.mbit_per_s()}});
    total += r.mbit_per_s();
  }
  return nlohmann::json{{"flows", flows}, {"total_mbit_per_s", total}}.dump(2) + "\n";
}

std::string probe_text(const std::vector<FlowResult>& results) {
  std::string out;
  double total = 0;
  for (const FlowResult& r : results) {
    out += r.from + " (" + r.src + ") -> " + r.to + " (" + r.dst + "): " + with_commas(r.bytes) + " bytes in " +
           trimmed(r.seconds) + " s = " + trimmed(r.mbit_per_s()) + " Mbit/s\n";
    total += r.mbit_per_s();
  }
  if (results.size() > 1) out += "total " + trimmed(total) + " Mbit/s\n";
  return out;
}

}  // namespace xm::testbed
