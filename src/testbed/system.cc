#include "testbed/system.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <cassert>

extern char** environ;

namespace xm::testbed {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

std::string errno_text(int err) { return std::strerror(err); }

// Closes the fds it holds.
struct Fds {
  int fd[6] = {-1, -1, -1, -1, -1, -1};
  ~Fds() {
    for (int f : fd)
      if (f >= 0) ::close(f);
  }
  void close(int i) {
    if (fd[i] >= 0) ::close(fd[i]);
    fd[i] = -1;
  }
};

}  // namespace

std::string command_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const std::string& a : argv) {
    bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::strchr("-_./:=@,+%", c);
    });
    out += (out.empty() ? "" : " ") + (plain ? a : "'" + a + "'");
  }
  return out;
}

namespace {

// What a finished command left: its outputs, and "" or how it failed ("exit 2").
struct Finished {
  std::string out, err;
  std::string failure;
};

Finished spawn_and_wait(const std::vector<std::string>& argv, const std::string& input) {
  Fds p;  // 0,1: stdin pipe; 2,3: stdout pipe; 4,5: stderr pipe
  for (int i = 0; i < 6; i += 2)
    if (::pipe2(&p.fd[i], O_CLOEXEC) != 0) return {"", "", "pipe: " + errno_text(errno)};
  // A command that exits before reading all of its input must not kill us with SIGPIPE:
  // ignore it here, and give the child the default back.
  struct sigaction ignore {}, old {};
  ignore.sa_handler = SIG_IGN;
  ::sigaction(SIGPIPE, &ignore, &old);
  struct RestorePipe {
    struct sigaction* old;
    ~RestorePipe() { ::sigaction(SIGPIPE, old, nullptr); }
  } restore{&old};
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t defaults;
  sigemptyset(&defaults);
  sigaddset(&defaults, SIGPIPE);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, p.fd[0], 0);
  posix_spawn_file_actions_adddup2(&actions, p.fd[3], 1);
  posix_spawn_file_actions_adddup2(&actions, p.fd[5], 2);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  int err = ::posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (err != 0) return {"", "", "cannot start " + argv[0] + ": " + errno_text(err)};
  p.close(0);
  p.close(3);
  p.close(5);

  // Feed stdin and drain both outputs together so that no pipe fills up. Our end of
  // stdin does not block: a blocking write of more than the pipe holds waits for all of
  // it, while the child waits for us to read what it printed (`ip -batch` of thousands
  // of route queries hung the controller that way).
  std::string out, errors;
  size_t written = 0;
  ::fcntl(p.fd[1], F_SETFL, ::fcntl(p.fd[1], F_GETFL) | O_NONBLOCK);
  if (input.empty()) p.close(1);
  while (p.fd[1] >= 0 || p.fd[2] >= 0 || p.fd[4] >= 0) {
    pollfd fds[3];
    int n = 0;
    int which[3];
    if (p.fd[1] >= 0) fds[n] = {p.fd[1], POLLOUT, 0}, which[n++] = 1;
    if (p.fd[2] >= 0) fds[n] = {p.fd[2], POLLIN, 0}, which[n++] = 2;
    if (p.fd[4] >= 0) fds[n] = {p.fd[4], POLLIN, 0}, which[n++] = 4;
    if (::poll(fds, static_cast<nfds_t>(n), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int k = 0; k < n; ++k) {
      if (!fds[k].revents) continue;
      int i = which[k];
      if (i == 1) {
        ssize_t w = ::write(p.fd[1], input.data() + written, input.size() - written);
        if (w > 0) written += static_cast<size_t>(w);
        if (w < 0 && errno != EINTR && errno != EAGAIN) written = input.size();
        if (written == input.size()) p.close(1);
      } else {
        char buf[4096];
        ssize_t r = ::read(p.fd[i], buf, sizeof buf);
        if (r > 0) (i == 2 ? out : errors).append(buf, static_cast<size_t>(r));
        else if (r == 0 || (errno != EINTR && errno != EAGAIN)) p.close(i);
      }
    }
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return {std::move(out), std::move(errors), ""};
  std::string how = WIFEXITED(status) ? "exit " + std::to_string(WEXITSTATUS(status))
                                      : "signal " + std::to_string(WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && errors.empty()) errors = "command not found";
  return {std::move(out), trim(errors), how};
}

}  // namespace

Result<std::string> run_command(const std::vector<std::string>& argv, const std::string& input) {
  Finished f = spawn_and_wait(argv, input);
  if (f.failure.empty()) return std::move(f.out);
  return Error{"`" + command_line(argv) + "` failed (" + f.failure + ")" + (f.err.empty() ? "" : ": " + f.err)};
}

Status run_batch(const Batch& batch) {
  if (batch.lines.empty()) return Status::Ok();
  std::vector<std::string> argv{batch.tool};
  if (!batch.netns.empty()) argv.insert(argv.end(), {"-n", batch.netns});
  argv.insert(argv.end(), {"-batch", "-"});
  std::string input;
  for (const std::string& l : batch.lines) input += l + "\n";
  Finished f = spawn_and_wait(argv, input);
  if (f.failure.empty()) return Status::Ok();
  // ip/tc/bridge name the failing line as "Command failed -:N": show that command.
  std::string where = "Command failed -:";
  size_t at = f.err.find(where);
  if (at == std::string::npos)
    return Error{"`" + command_line(argv) + "` failed (" + f.failure + ")" + (f.err.empty() ? "" : ": " + f.err)};
  size_t line = std::strtoul(f.err.c_str() + at + where.size(), nullptr, 10);
  std::string detail = trim(f.err.substr(0, at));
  std::replace(detail.begin(), detail.end(), '\n', ' ');
  std::string cmd = argv[0] + (batch.netns.empty() ? "" : " -n " + batch.netns) + " " +
                    (line >= 1 && line <= batch.lines.size() ? batch.lines[line - 1] : "(line " + std::to_string(line) + ")");
  return Error{"`" + cmd + "` failed" + (detail.empty() ? "" : ": " + detail)};
}

bool is_root() { return ::geteuid() == 0; }

Error root_required() {
  return Error{"must run as root: the testbed creates network namespaces, veth links, bridges and "
               "tc qdiscs, which need CAP_SYS_ADMIN and CAP_NET_ADMIN (try sudo)"};
}

std::vector<std::string> list_netns() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/run/netns", ec)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

Result<NetnsGuard> NetnsGuard::enter(const std::string& netns) {
  int home = ::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
  if (home < 0) return Error{"cannot open /proc/thread-self/ns/net: " + errno_text(errno)};
  std::string path = "/run/netns/" + netns;
  int target = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (target < 0) {
    int err = errno;
    ::close(home);
    return Error{"cannot open network namespace " + path + ": " + errno_text(err)};
  }
  int rc = ::setns(target, CLONE_NEWNET);
  int err = errno;
  ::close(target);
  if (rc != 0) {
    ::close(home);
    return Error{"cannot enter network namespace " + netns + ": " + errno_text(err)};
  }
  return NetnsGuard(home);
}

NetnsGuard::~NetnsGuard() {
  if (home_ < 0) return;
  [[maybe_unused]] int rc = ::setns(home_, CLONE_NEWNET);
  assert(rc == 0);
  ::close(home_);
}

Status write_sysctls(const std::string& netns, const std::vector<std::pair<std::string, std::string>>& settings) {
  Result<NetnsGuard> in = NetnsGuard::enter(netns);
  if (!in) return Error{in.error().message};
  for (const auto& [key, value] : settings) {
    std::string path = "/proc/sys/" + key;
    std::replace(path.begin() + 10, path.end(), '.', '/');
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
    int err = errno;
    if (fd >= 0) ::close(fd);
    if (!ok) return Error{"sysctl " + key + "=" + value + " in " + netns + ": " + path + ": " + errno_text(err)};
  }
  return Status::Ok();
}

bool process_running(int pid) {
  FILE* f = std::fopen(("/proc/" + std::to_string(pid) + "/stat").c_str(), "r");
  if (!f) return false;
  char buf[512];
  size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  std::string_view line(buf, n);
  size_t paren = line.rfind(')');
  return paren != std::string_view::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

Result<int> start_daemon(const std::vector<std::string>& argv, const std::string& log, const std::string& pid_file) {
  if (argv.empty()) return Error{"start_daemon: no command"};
  std::vector<std::string> args = argv;
  std::vector<char*> cargv;
  for (std::string& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (out < 0) return Error{"cannot open " + log + ": " + errno_text(errno)};
  int in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(out), ::close(in);
    return Error{"fork: " + errno_text(e)};
  }
  if (pid == 0) {
    ::setsid();
    ::signal(SIGPIPE, SIG_DFL);
    ::dup2(in, 0), ::dup2(out, 1), ::dup2(out, 2);
    ::execvp(cargv[0], cargv.data());
    std::string msg = "cannot start " + args[0] + ": " + errno_text(errno) + "\n";
    (void)!::write(2, msg.data(), msg.size());
    ::_exit(127);
  }
  ::close(out), ::close(in);
  std::string text = std::to_string(pid) + "\n";
  int fd = ::open(pid_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || ::write(fd, text.data(), text.size()) != ssize_t(text.size())) {
    if (fd >= 0) ::close(fd);
    ::kill(pid, SIGKILL);
    return Error{"cannot write " + pid_file};
  }
  ::close(fd);
  return int(pid);
}

int stop_daemons_under(const std::string& dir) {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::error_code ec;
  for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().extension() == ".pid") files.push_back(it->path().string());
  return stop_daemons(files, dir);
}

int stop_daemons(const std::vector<std::string>& pid_files, const std::string& mentioned) {
  std::vector<pid_t> ours;
  for (const std::string& file : pid_files) {
    FILE* f = std::fopen(file.c_str(), "r");
    long pid = 0;
    if (!f) continue;
    if (std::fscanf(f, "%ld", &pid) != 1) pid = 0;
    std::fclose(f);
    if (pid <= 1) continue;
    std::string cmdline;
    if (FILE* c = std::fopen(("/proc/" + std::to_string(pid) + "/cmdline").c_str(), "r")) {
      char buf[4096];
      size_t n = std::fread(buf, 1, sizeof buf, c);
      std::fclose(c);
      cmdline.assign(buf, n);
    }
    if (cmdline.find(mentioned) == std::string::npos) continue;  // gone, or someone else now
    if (::kill(pid_t(pid), SIGTERM) == 0) ours.push_back(pid_t(pid));
  }
  // Reap our own children; wait for the others to vanish.
  auto gone = [](pid_t pid) { return ::waitpid(pid, nullptr, WNOHANG) == pid || !process_running(pid); };
  for (int round = 0; round < 200; ++round) {
    if (std::all_of(ours.begin(), ours.end(), gone)) return int(ours.size());
    ::usleep(10000);
  }
  for (pid_t pid : ours)
    if (!gone(pid)) ::kill(pid, SIGKILL), ::waitpid(pid, nullptr, WNOHANG);
  return int(ours.size());
}

}  // namespace xm::testbed
