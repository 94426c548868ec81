// `xm ops demo` as a newcomer runs it, on a real testbed (FRR, lldpd, the agents,
// Prometheus, the controller, an xccl job): the loss it injects on a spine link is
// located on that cable and healed by a drain, the job's results stay exact, the phase
// table is printed, and nothing of the testbed is left after it, even when it is
// interrupted. Needs root.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <regex>
#include <string>
#include <thread>

#include "common/shell.h"

namespace {

const std::string kXm = "'" XM_BINARY "'";

// Nothing of testbed `name` left: no namespace, no state, no runtime directory.
void expect_gone(const std::string& name) {
  shell::Outcome ns = shell::run("ip netns list");
  EXPECT_EQ(ns.out.find("xm-" + name + "-"), std::string::npos) << ns.out;
  EXPECT_NE(::access(("/run/xm-testbed/" + name + ".json").c_str(), F_OK), 0);
  // "[d]m1" matches "dm1" but not this pattern in the shell's own command line.
  shell::Outcome procs = shell::run("pgrep -af 'xm-testbed/[" + name.substr(0, 1) + "]" + name.substr(1) + "/' || true");
  EXPECT_EQ(procs.out, "") << "still running";
}

TEST(DemoLive, LocatesTheInjectedLossOnItsCableHealsItAndRemovesEverything) {
  ASSERT_EQ(::geteuid(), 0u) << "the demo needs root (network namespaces, FRR): run the live tests as root";
  const std::string name = "dm" + std::to_string(::getpid() % 100000);
  shell::Outcome d = shell::run(kXm + " ops demo --name " + name + " --before 4 --after 4");
  ASSERT_EQ(d.exit_code, 0) << d.out;
  // The incident as `xm ops locate` names it: the cable with the fault, its class.
  EXPECT_TRUE(std::regex_search(d.out, std::regex("\\[located\\][^\n]*\n(OPEN|closed) +tor0:spine1 - spine1:tor0 +loss"))) << d.out;
  EXPECT_NE(d.out.find("that is the cable the fault was injected on"), std::string::npos) << d.out;
  EXPECT_TRUE(std::regex_search(d.out, std::regex("\\[healed\\] [^\n]* s after the fault: drain tor0:spine1 - spine1:tor0"))) << d.out;
  // Each phase with its rows; before and after with a bandwidth.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(d.out, m, std::regex("before the fault +[0-9.]+ +([0-9]+) +([0-9.]+)"))) << d.out;
  EXPECT_GE(std::stoi(m[1]), 2);
  EXPECT_GT(std::stod(m[2]), 0);
  EXPECT_NE(d.out.find("fault to heal"), std::string::npos) << d.out;
  ASSERT_TRUE(std::regex_search(d.out, m, std::regex("after the heal +[0-9.]+ +([0-9]+) +([0-9.]+)"))) << d.out;
  EXPECT_GE(std::stoi(m[1]), 2);
  EXPECT_GT(std::stod(m[2]), 0);
  EXPECT_NE(d.out.find("every result exact"), std::string::npos) << d.out;
  EXPECT_NE(d.out.find("[down]"), std::string::npos) << d.out;
  expect_gone(name);
}

TEST(DemoLive, AnInterruptedDemoStillRemovesEverything) {
  ASSERT_EQ(::geteuid(), 0u) << "the demo needs root: run the live tests as root";
  const std::string name = "di" + std::to_string(::getpid() % 100000);
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(out[1], 1);
    ::dup2(out[1], 2);
    ::execl("/bin/sh", "sh", "-c", (std::string("exec ") + kXm + " ops demo --name " + name + " --before 600").c_str(), nullptr);
    ::_exit(127);
  }
  ::close(out[1]);
  // Interrupt it as Ctrl-C would once the job runs: mid-job, with everything standing.
  std::string seen;
  char buf[4096];
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (seen.find("busbw") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
    ssize_t n = ::read(out[0], buf, sizeof buf);
    if (n <= 0) break;
    seen.append(buf, size_t(n));
  }
  ASSERT_NE(seen.find("busbw"), std::string::npos) << seen;
  ::kill(pid, SIGINT);
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) seen.append(buf, size_t(n));
  ::close(out[0]);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << seen;
  EXPECT_EQ(WEXITSTATUS(status), 130) << seen;
  EXPECT_NE(seen.find("[down]"), std::string::npos) << seen;
  expect_gone(name);
}

TEST(DemoLive, BadArgumentsAreClearErrorsAndBuildNothing) {
  for (const char* args : {"--inject swap", "--inject nonsense", "--before -1", "--name Bad_Name"}) {
    shell::Outcome o = shell::run(kXm + " ops demo " + args);
    EXPECT_EQ(o.exit_code, 2) << args << ": " << o.out;
    EXPECT_NE(o.out.find("xm ops demo: "), std::string::npos) << args << ": " << o.out;
  }
  shell::Outcome ns = shell::run("ip netns list");
  EXPECT_EQ(ns.out.find("xm-demo-"), std::string::npos) << ns.out;
}

}  // namespace
