// join_strangers: how long N ranks take to make a communicator while strangers hold
// connections to the bootstrap root, against the same join undisturbed.
//
//   join_strangers [--np N] [--strangers K] [--rounds R]
//
// Each round forks N ranks, makes a unique id (this process hosts the root), opens K
// connections to the root in one of four ways, then hands the ranks the id; each times
// xcclCommInitRank plus one all-reduce (so every rank has met every other) from when it got
// the id; the round's figure is the slowest rank's. Modes alternate round by round: none (undisturbed), silent (connect, say
// nothing), garbage (an HTTP request), slow (a byte every 100 ms).
// Prints per mode the median, min and max in ms and the median over the undisturbed one.
#include <xccl/xccl.h>

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "ccl/net/socket.h"
#include "local_job.h"

namespace {

using namespace xm::ccl;
using Clock = std::chrono::steady_clock;

enum class Mode { kNone, kSilent, kGarbage, kSlow };
const char* name(Mode m) {
  switch (m) {
    case Mode::kNone: return "none";
    case Mode::kSilent: return "silent";
    case Mode::kGarbage: return "garbage";
    case Mode::kSlow: return "slow";
  }
  return "?";
}

// K connections to the root, held (and for kSlow, fed a byte at a time) until destroyed.
class Strangers {
 public:
  Strangers(Mode mode, int count, const net::Endpoint& root) {
    if (mode == Mode::kNone) return;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    for (int i = 0; i < count; ++i) {
      xm::Result<net::Fd> fd = net::connect_to(root, deadline);
      if (!fd) std::fprintf(stderr, "join_strangers: %s\n", fd.error().message.c_str()), std::exit(1);
      if (mode == Mode::kGarbage) {
        const char junk[] = "GET / HTTP/1.1\r\nHost: xccl\r\n\r\n";
        (void)net::send_all(fd->get(), junk, sizeof junk - 1, deadline);
      }
      fds_.push_back(std::move(fd).value());
    }
    if (mode == Mode::kSlow)
      trickle_ = std::thread([this] {
        while (!stop_) {
          for (net::Fd& fd : fds_) (void)::send(fd.get(), "X", 1, MSG_DONTWAIT | MSG_NOSIGNAL);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      });
  }
  ~Strangers() {
    stop_ = true;
    if (trickle_.joinable()) trickle_.join();
  }

 private:
  std::vector<net::Fd> fds_;
  std::atomic<bool> stop_{false};
  std::thread trickle_;
};

// One rank: init plus a one-element all-reduce, timed from when it got the id; the
// nanoseconds go to `out`.
int rank_main(const xcclUniqueId& id, int rank, int ranks, int out) {
  Clock::time_point start = Clock::now();
  xcclComm_t comm = nullptr;
  float x = 1, y = 0;
  bool ok = xcclCommInitRank(&comm, ranks, id, rank) == xcclSuccess &&
            xcclAllReduce(&x, &y, 1, xcclFloat32, xcclSum, comm) == xcclSuccess && y == float(ranks);
  int64_t ns = std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start).count();
  if (!ok) std::fprintf(stderr, "rank %d: %s\n", rank, xcclGetLastError());
  if (comm) xcclCommDestroy(comm);
  return ok && ::write(out, &ns, sizeof ns) == sizeof ns ? 0 : 1;
}

// One round: the slowest rank's join in ms. The strangers connect once the root exists,
// before the ranks get its id.
double join_once(Mode mode, int ranks, int strangers) {
  int report[2];
  if (::pipe(report) != 0) std::perror("pipe"), std::exit(1);
  std::optional<Strangers> crowd;
  int failed = bench::run_local_job(
      ranks, 1,
      [&](const std::vector<xcclUniqueId>& ids, int rank) {
        ::close(report[0]);
        return rank_main(ids[0], rank, ranks, report[1]);
      },
      [&](const std::vector<xcclUniqueId>& ids) {
        char where[256] = {};
        std::sscanf(ids[0].internal, "xccl1 %255s", where);
        crowd.emplace(mode, strangers, net::parse_endpoint(where).value());
      });
  ::close(report[1]);
  if (failed) std::fprintf(stderr, "join_strangers: %d rank(s) failed\n", failed), std::exit(1);
  int64_t slowest = 0;
  for (int r = 0; r < ranks; ++r) {
    int64_t ns = -1;
    if (::read(report[0], &ns, sizeof ns) != sizeof ns) std::fprintf(stderr, "join_strangers: a report is missing\n"), std::exit(1);
    slowest = std::max(slowest, ns);
  }
  ::close(report[0]);
  return double(slowest) / 1e6;
}

int parse_int(const char* flag, const char* text, int lo, int hi) {
  char* end = nullptr;
  long v = std::strtol(text, &end, 10);
  if (*end || v < lo || v > hi) std::fprintf(stderr, "join_strangers: %s must be %d to %d\n", flag, lo, hi), std::exit(2);
  return int(v);
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 4, strangers = 100, rounds = 9;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) std::fprintf(stderr, "join_strangers: %s needs a value\n", a.c_str()), std::exit(2);
    if (a == "--np") ranks = parse_int("--np", argv[++i], 1, 64);
    else if (a == "--strangers") strangers = parse_int("--strangers", argv[++i], 0, 500);
    else if (a == "--rounds") rounds = parse_int("--rounds", argv[++i], 1, 1000);
    else std::fprintf(stderr, "join_strangers: unknown option %s\n", a.c_str()), std::exit(2);
  }
  setenv("XCCL_DEBUG", "NONE", 0);  // one refusal line per round would bury the table
  const Mode modes[] = {Mode::kNone, Mode::kSilent, Mode::kGarbage, Mode::kSlow};
  std::vector<std::vector<double>> ms(4);
  join_once(Mode::kNone, ranks, strangers);  // warm: page cache, first fork
  for (int round = 0; round < rounds; ++round)
    for (int m = 0; m < 4; ++m) ms[m].push_back(join_once(modes[m], ranks, strangers));
  std::printf("# %d ranks join (init + one all-reduce, slowest rank) with %d strangers on the root; %d rounds\n",
              ranks, strangers, rounds);
  std::printf("%-8s %10s %10s %10s %10s\n", "mode", "median_ms", "min_ms", "max_ms", "vs_none");
  double base = bench::median(ms[0]);
  for (int m = 0; m < 4; ++m)
    std::printf("%-8s %10.2f %10.2f %10.2f %10.3f\n", name(modes[m]), bench::median(ms[m]),
                *std::min_element(ms[m].begin(), ms[m].end()), *std::max_element(ms[m].begin(), ms[m].end()),
                bench::median(ms[m]) / base);
  return 0;
}
