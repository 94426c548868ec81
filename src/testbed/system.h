// The testbed's few contacts with the system: running ip/tc/bridge, entering network
// namespaces, writing sysctls. Every failure becomes an Error that names the command
// line (or the file) and carries what the command printed on stderr.
//
// Not thread-safe in the sense that NetnsGuard changes the calling thread's network
// namespace; other threads are unaffected.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "util/result.h"

namespace xm::testbed {

// `argv` as a shell would show it: ip -n xm-tb-h0 link set nic0 up.
std::string command_line(const std::vector<std::string>& argv);

// Runs argv[0] (looked up in PATH) with `input` on stdin; returns its stdout. Error when
// it cannot start or exits non-zero: "`ip ...` failed (exit 2): <stderr>".
Result<std::string> run_command(const std::vector<std::string>& argv, const std::string& input = "");

// One batch of commands for ip, tc or bridge (`tool -n NETNS -batch -`; no -n for an
// empty netns), stopped at the first failure, which is reported with its line.
struct Batch {
  std::string tool;
  std::string netns;
  std::vector<std::string> lines;
};
Status run_batch(const Batch& batch);

// Whether this process may create namespaces and links (effective uid 0).
bool is_root();
// The error every testbed command gives when !is_root().
Error root_required();

// Names in /run/netns (the named network namespaces), sorted.
std::vector<std::string> list_netns();

// Moves the calling thread into network namespace `netns` (a name under /run/netns)
// and back to where it was when destroyed. Sockets opened meanwhile stay in `netns`.
class NetnsGuard {
 public:
  static Result<NetnsGuard> enter(const std::string& netns);
  NetnsGuard(NetnsGuard&& other) noexcept : home_(other.home_) { other.home_ = -1; }
  NetnsGuard& operator=(NetnsGuard&&) = delete;
  ~NetnsGuard();

 private:
  explicit NetnsGuard(int home) : home_(home) {}
  int home_ = -1;
};

// True while process `pid` exists and is not a zombie (a daemon's parent, init here,
// may be slow to reap it).
bool process_running(int pid);

// Starts argv[0] (looked up in PATH) detached: its own session, stdin /dev/null, stdout
// and stderr appended to `log`; writes its pid to `pid_file`. Returns the pid.
Result<int> start_daemon(const std::vector<std::string>& argv, const std::string& log, const std::string& pid_file);

// Stops (SIGTERM, then SIGKILL after 2 s) every process named by one of `pid_files`
// whose command line mentions `mentioned` (so a reused pid is never hit); returns how
// many it stopped. stop_daemons_under: every *.pid file under `dir`, mentioning `dir`.
int stop_daemons(const std::vector<std::string>& pid_files, const std::string& mentioned);
int stop_daemons_under(const std::string& dir);

// Writes each (key, value), key in sysctl's dotted form, inside `netns`.
Status write_sysctls(const std::string& netns, const std::vector<std::pair<std::string, std::string>>& settings);

}  // namespace xm::testbed
