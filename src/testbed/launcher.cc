#include "testbed/launcher.h"


#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <random>
#include <algorithm>

#include "testbed/daemons.h"
#include "testbed/system.h"
#include "util/format.h"

namespace xm::testbed {
namespace {

using Clock = std::chrono::steady_clock;

volatile std::sig_atomic_t g_interrupted = 0;  // the signal that asked the job to stop

extern "C" void on_stop_signal(int sig) { g_interrupted = sig; }

// Installs on_stop_signal for SIGINT, SIGTERM and SIGHUP, and ignores SIGPIPE (a closed
// stdout must not kill the launcher and orphan the ranks); restores all four.
class StopSignals {
 public:
  StopSignals() {
    g_interrupted = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    ::sigaction(SIGPIPE, &ignore, &old_[3]);
  }
  ~StopSignals() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
    ::sigaction(SIGPIPE, &old_[3], nullptr);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[4];
};

struct Rank {
  uint32_t rank = 0, host = 0, local = 0;
  pid_t pid = -1;
  bool running = false;
  int fd[2] = {-1, -1};  // stdout, stderr pipes (--prefix)
  std::string partial[2];
};

int exit_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 1;
}

void write_all(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Reads what is available on rank r's stream k and writes its complete lines, prefixed,
// to `to`. At end of file the last line is written even without a newline, and the fd closed.
void forward(Rank& r, int k, int to) {
  char buf[8192];
  ssize_t n = ::read(r.fd[k], buf, sizeof buf);
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return;
  std::string prefix = "[rank " + std::to_string(r.rank) + "] ";
  std::string& part = r.partial[k];
  std::string out;
  if (n > 0) {
    part.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = part.find('\n', start)) != std::string::npos; start = nl + 1)
      out += prefix + part.substr(start, nl + 1 - start);
    part.erase(0, start);
  } else {
    if (!part.empty()) out += prefix + part + "\n";
    part.clear();
    ::close(r.fd[k]);
    r.fd[k] = -1;
  }
  write_all(to, out);
}

void say(int to, const std::string& message) { write_all(to, "xm testbed run: " + message + "\n"); }

// fork + exec of one rank; the child gets its own process group.
Status start_rank(Rank& r, const std::string& netns, const RunOptions& options, const Env& env) {
  std::vector<std::string> args{"ip", "netns", "exec", netns};
  args.insert(args.end(), options.command.begin(), options.command.end());
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> vars;
  for (char** e = environ; *e; ++e) {
    std::string_view v(*e);
    std::string_view key = v.substr(0, v.find('='));
    bool replaced = false;
    for (const auto& [k, value] : env) replaced = replaced || key == k;
    if (!replaced) vars.emplace_back(v);
  }
  for (const auto& [k, value] : env) vars.push_back(k + "=" + value);
  std::vector<char*> envp;
  for (std::string& v : vars) envp.push_back(v.data());
  envp.push_back(nullptr);

  const bool prefix = options.prefix || !options.output.empty();
  int pipes[2][2] = {{-1, -1}, {-1, -1}};
  if (prefix)
    for (auto& p : pipes)
      if (::pipe2(p, O_CLOEXEC) != 0) return Error{std::string("pipe: ") + std::strerror(errno)};
  pid_t pid = ::fork();
  if (pid < 0) return Error{std::string("fork: ") + std::strerror(errno)};
  if (pid == 0) {
    ::setpgid(0, 0);
    ::signal(SIGPIPE, SIG_DFL);  // ignored in the launcher only
    if (prefix) {
      ::dup2(pipes[0][1], 1);
      ::dup2(pipes[1][1], 2);
    }
    ::execvpe("ip", argv.data(), envp.data());
    std::string msg = "xm testbed run: cannot start ip: " + std::string(std::strerror(errno)) + "\n";
    write_all(2, msg);
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also here, so that a kill right after start reaches the group
  r.pid = pid;
  r.running = true;
  if (prefix) {
    for (int k = 0; k < 2; ++k) {
      ::close(pipes[k][1]);
      r.fd[k] = pipes[k][0];
      ::fcntl(r.fd[k], F_SETFL, O_NONBLOCK);
    }
  }
  return Status::Ok();
}

}  // namespace

Env rank_env(const Plan& plan, uint32_t host, uint32_t local, const RunOptions& options, uint16_t master_port,
             const std::string& secret) {
  const HostPlan& h = plan.hosts[host];
  uint32_t k = options.ranks_per_host;
  std::vector<const NicPlan*> nics;
  size_t own = local % h.nics.size();
  if (options.rails == RailMode::kAll) {
    for (const NicPlan& n : h.nics) nics.push_back(&n);
  } else {
    nics.push_back(&h.nics[own]);
    if (options.rails == RailMode::kOwnSpare)
      for (size_t i = 1; i < h.nics.size(); ++i) nics.push_back(&h.nics[(own + i) % h.nics.size()]);
  }
  std::string rails, rail_ids;
  for (const NicPlan* n : nics) {
    rails += (rails.empty() ? "" : ",") + n->address + "@" + trimmed(static_cast<double>(n->rate_bps) / 1e9, 6) +
             (options.rails == RailMode::kOwnSpare && n != nics[0] ? "/spare" : "");
    rail_ids += (rail_ids.empty() ? "" : ",") + std::to_string(n->rail);
  }
  return {{"RANK", std::to_string(host * k + local)},
          {"WORLD_SIZE", std::to_string(plan.hosts.size() * k)},
          {"LOCAL_RANK", std::to_string(local)},
          {"LOCAL_WORLD_SIZE", std::to_string(k)},
          {"NODE_RANK", std::to_string(host)},
          {"MASTER_ADDR", plan.hosts[0].nics[0].address},
          {"MASTER_PORT", std::to_string(master_port)},
          {"XCCL_SECRET", secret},
          {"XCCL_RAILS", rails},
          {"XM_TESTBED", plan.name},
          {"XM_TESTBED_HOST", std::to_string(host)},
          {"XM_TESTBED_NETNS", h.netns},
          {"XM_TESTBED_RAILS", rail_ids},
          {"XCCL_RAIL_ADVICE", rail_advice_path(plan.name)}};
}

std::string new_secret() {
  std::random_device rd;  // the kernel's random source on Linux
  static const char* hex = "0123456789abcdef";
  std::string s;
  for (int i = 0; i < 8; ++i) {
    uint32_t v = rd();
    for (int j = 0; j < 4; ++j) {
      s += hex[v & 0xf];
      s += hex[(v >> 4) & 0xf];
      v >>= 8;
    }
  }
  return s;
}

Result<uint16_t> free_port(const Plan& plan) {
  Result<NetnsGuard> in = NetnsGuard::enter(plan.hosts[0].netns);
  if (!in) return Error{in.error().message};
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  ::inet_pton(AF_INET, plan.hosts[0].nics[0].address.c_str(), &a.sin_addr);
  socklen_t len = sizeof a;
  bool ok = fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) return Error{"no free port at " + plan.hosts[0].nics[0].address + ": " + std::strerror(err)};
  return static_cast<uint16_t>(ntohs(a.sin_port));
}

Result<int> run_job(const Plan& plan, const RunOptions& options) {
  if (!is_root()) return root_required();
  if (options.command.empty()) return Error{"no command to run (xm testbed run [options] -- COMMAND ARGS...)"};
  if (options.ranks_per_host < 1) return Error{"--ranks-per-host must be at least 1"};
  std::vector<std::string> present = list_netns();
  for (const HostPlan& h : plan.hosts)
    if (std::find(present.begin(), present.end(), h.netns) == present.end())
      return Error{"testbed " + plan.name + " has no namespace " + h.netns + "; remove it with `xm testbed down --name " +
                   plan.name + "` and bring it up again"};
  Result<uint16_t> port = free_port(plan);
  if (!port) return Error{port.error().message};
  const char* given = std::getenv("XCCL_SECRET");
  std::string secret = given && *given ? given : new_secret();

  int sink[2] = {1, 2};  // where the ranks' stdout and stderr, and what the launcher says, go
  if (!options.output.empty()) {
    int fd = ::open(options.output.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0) return Error{options.output + ": " + std::strerror(errno)};
    sink[0] = sink[1] = fd;
  }
  struct CloseSink {
    int fd;
    ~CloseSink() {
      if (fd > 2) ::close(fd);
    }
  } close_sink{sink[0]};

  StopSignals signals;
  std::vector<Rank> ranks;
  uint32_t k = options.ranks_per_host;
  for (uint32_t h = 0; h < plan.hosts.size(); ++h)
    for (uint32_t l = 0; l < k; ++l) {
      Rank r;
      r.rank = h * k + l, r.host = h, r.local = l;
      ranks.push_back(std::move(r));
    }

  int result = 0;
  bool stopping = false;
  Clock::time_point kill_at{};
  bool killed = false;
  size_t running = 0;
  auto stop_all = [&](int status, const std::string& why, const char* which = "") {
    if (stopping) return;
    stopping = true;
    result = status;
    if (running > 0) say(sink[1], why + "; stopping " + which + std::to_string(running) + " rank(s)");
    else say(sink[1], why);
    for (Rank& r : ranks)
      if (r.running) ::kill(-r.pid, SIGTERM);
    kill_at = Clock::now() + std::chrono::seconds(2);
  };

  for (Rank& r : ranks) {
    Status s = start_rank(r, plan.hosts[r.host].netns, options, rank_env(plan, r.host, r.local, options, *port, secret));
    if (!s) {
      stop_all(127, "cannot start rank " + std::to_string(r.rank) + ": " + s.message());
      break;
    }
    ++running;
  }

  Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(options.timeout_s));
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<Rank*, int>> owners;
    for (Rank& r : ranks)
      for (int s = 0; s < 2; ++s)
        if (r.fd[s] >= 0) fds.push_back({r.fd[s], POLLIN, 0}), owners.emplace_back(&r, s);
    if (running == 0 && fds.empty()) break;
    if (!fds.empty()) {
      int n = ::poll(fds.data(), fds.size(), 50);
      for (size_t i = 0; n > 0 && i < fds.size(); ++i)
        if (fds[i].revents) forward(*owners[i].first, owners[i].second, sink[owners[i].second]);
    } else {
      ::usleep(20000);
    }
    for (Rank& r : ranks) {
      if (!r.running) continue;
      int ws = 0;
      pid_t got = ::waitpid(r.pid, &ws, WNOHANG);
      if (got != r.pid) continue;
      r.running = false;
      --running;
      int status = exit_status(ws);
      if (status != 0 && !stopping)
        stop_all(status, "rank " + std::to_string(r.rank) + " (" + plan.hosts[r.host].name + ", local rank " +
                             std::to_string(r.local) + ") " +
                             (WIFSIGNALED(ws) ? "was killed by signal " + std::to_string(WTERMSIG(ws))
                                              : "exited with status " + std::to_string(status)),
                 "the other ");
    }
    if (running == 0) {
      // Output still buffered in the pipes is read by the loop; a stray grandchild that
      // keeps a pipe open is not waited for.
      for (Rank& r : ranks)
        for (int s = 0; s < 2; ++s)
          while (r.fd[s] >= 0) {
            pollfd p{r.fd[s], POLLIN, 0};
            if (::poll(&p, 1, 0) <= 0) {
              if (!r.partial[s].empty()) write_all(sink[s], "[rank " + std::to_string(r.rank) + "] " + r.partial[s] + "\n");
              ::close(r.fd[s]);
              r.fd[s] = -1;
            } else {
              forward(r, s, sink[s]);
            }
          }
      break;
    }
    if (!stopping && options.stop && options.stop->load())
      stop_all(0, "stopped: the job has run long enough");
    if (!stopping && g_interrupted)
      stop_all(128 + g_interrupted, "interrupted by signal " + std::to_string(g_interrupted));
    if (!stopping && options.timeout_s > 0 && Clock::now() >= deadline)
      stop_all(124, "timed out after " + trimmed(options.timeout_s) + " s");
    if (stopping && !killed && Clock::now() >= kill_at) {
      killed = true;
      for (Rank& r : ranks)
        if (r.running) ::kill(-r.pid, SIGKILL);
    }
  }
  return result;
}

}  // namespace xm::testbed
