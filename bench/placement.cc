// placement: does an xccl collective's speed depend on where the caller's buffers sit?
//
//   placement --np N [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [--rounds R]
//             [--collectives all_reduce,all_gather,reduce_scatter,alltoall] [-R 0|1]
//
// A program that cuts its buffers out of large allocations gets them at whatever offset in
// a 4 KiB page the allocator left (malloc's large blocks start 16 bytes into a page), send
// and receive buffers often at the same one. N local ranks (processes, as `xccl-perf --np`
// starts them) run each collective (fp32, sum) with the send buffer 16 bytes into a page
// and the receive buffer 0, 16, 64, 512, 2048 and 4032 bytes past the send buffer's page
// offset, and with both page-aligned. All placements run in one launch, in turn, round
// after round (ITERS timed calls each, the slowest rank's time), so what differs between
// launches (physical pages, where the scheduler put the ranks) is the same for all of them
// and a slow spell of the machine hits every placement alike. Prints, per collective and
// size, the median out-of-place busbw (GB/s) of the rounds at every placement, and
// slowest / fastest. The first placement runs a second time at the end of every round, and
// "same placement twice" (the lower of its two medians over the higher) is what the
// machine's noise alone does to a slowest / fastest figure: a placement effect smaller
// than that cannot be told apart from it here.
#include <xccl/xccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "ccl/launch.h"
#include "local_job.h"

namespace {

using namespace xm::ccl;

struct Options {
  int np = 0, iters = 20, warmup = 5, rounds = 5, registered = 0;
  size_t min_bytes = 64 << 10, max_bytes = 16 << 20;
  double factor = 4;
  std::vector<std::string> collectives = {"all_reduce", "all_gather", "reduce_scatter", "alltoall"};
};

// (send, receive) page offsets.
constexpr std::pair<size_t, size_t> kPlaces[] = {{16, 16}, {16, 32}, {16, 80}, {16, 528}, {16, 2064}, {16, 4048}, {0, 0}};
constexpr size_t kNumPlaces = std::size(kPlaces);
// Runs per round: every placement, then the first one again (the noise control).
constexpr size_t kRuns = kNumPlaces + 1;

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "placement: %s\nusage: placement --np N [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [--rounds R] "
               "[--collectives a,b,...] [-R 0|1]\n", why.c_str());
  std::exit(2);
}

size_t size_arg(const char* s) {
  if (std::optional<size_t> v = bench::parse_size(s)) return *v;
  usage(std::string("\"") + s + "\" is not a size like 64K or 16M");
}

Collective collective_arg(const std::string& s) {
  if (std::optional<Collective> c = bench::parse_collective(s)) return *c;
  usage("\"" + s + "\" is not all_reduce, all_gather, reduce_scatter or alltoall");
}

// Room for `bytes` at any page offset: page-aligned, from malloc-like memory or xcclMemAlloc.
class Block {
 public:
  Block(size_t bytes, bool registered) : size_((bytes + 8191) / 4096 * 4096), registered_(registered) {
    if (registered_) {
      if (xcclMemAlloc(reinterpret_cast<void**>(&p_), size_) != xcclSuccess) usage("xcclMemAlloc failed");
    } else {
      p_ = static_cast<std::byte*>(std::aligned_alloc(4096, size_));
      if (!p_) usage("out of memory");
    }
    std::memset(p_, 1, size_);
  }
  ~Block() {
    if (registered_) xcclMemFree(p_);
    else std::free(p_);
  }
  std::byte* at(size_t page_offset) { return p_ + page_offset; }

 private:
  size_t size_;
  bool registered_;
  std::byte* p_ = nullptr;
};

int run_rank(const Options& o, xcclComm_t comm, int rank) {
  const int n = o.np;
  Block send(o.max_bytes, o.registered), recv(o.max_bytes, o.registered);
  if (rank == 0)
    std::printf("# placement: %d ranks, float, %d rounds of %d timed calls (after %d warm-up) per placement, %s buffers;"
                " median out-of-place busbw (GB/s)\n", n, o.rounds, o.iters, o.warmup, o.registered ? "registered" : "plain");
  for (const std::string& name : o.collectives) {
    const Collective c = collective_arg(name);
    const bool scaled = c != Collective::kAllReduce;
    if (rank == 0) {
      std::printf("\n### %s, %d ranks\n\n| size |", name.c_str(), n);
      for (auto [s, r] : kPlaces)
        std::printf(" %s |", s == 0 && r == 0 ? "both page-aligned" : ("recv +" + std::to_string(r - s)).c_str());
      std::printf(" slowest / fastest | same placement twice |\n|---:|");
      for (size_t p = 0; p < kNumPlaces; ++p) std::printf("---:|");
      std::printf("---:|---:|\n");
    }
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = size_t(double(bytes) * o.factor)) {
      CollectiveArgs a;
      a.collective = c;
      a.type = DataType::kFloat32;
      a.op = RedOp::kSum;
      a.ranks = n, a.rank = rank;
      a.count = bytes / 4 / (scaled ? n : 1);
      std::vector<std::vector<double>> busbw(kRuns);
      for (int round = 0; round < o.rounds; ++round)
        for (size_t p = 0; p < kRuns; ++p) {
          const void* in = send.at(kPlaces[p % kNumPlaces].first);
          void* out = recv.at(kPlaces[p % kNumPlaces].second);
          for (int i = 0; i < (round == 0 ? o.warmup : 1); ++i)
            if (launch_collective(a, in, out, comm) != xcclSuccess) return 1;
          double t = 0;
          if (xcclAllReduce(&t, &t, 1, xcclFloat64, xcclSum, comm) != xcclSuccess) return 1;  // lines the ranks up
          auto t0 = std::chrono::steady_clock::now();
          for (int i = 0; i < o.iters; ++i)
            if (launch_collective(a, in, out, comm) != xcclSuccess) return 1;
          t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
          if (xcclAllReduce(&t, &t, 1, xcclFloat64, xcclMax, comm) != xcclSuccess) return 1;  // the slowest rank's
          busbw[p].push_back(double(bytes) / t / 1e9 * xm::sched::bus_factor(c, n));
        }
      if (rank != 0) continue;
      std::printf("| %zu KiB |", bytes >> 10);
      std::vector<double> median(kRuns);
      for (size_t p = 0; p < kRuns; ++p) median[p] = bench::median(busbw[p]);
      for (size_t p = 0; p < kNumPlaces; ++p) std::printf(" %.2f |", median[p]);
      auto [lo, hi] = std::minmax_element(median.begin(), median.begin() + kNumPlaces);
      const double first = median.front(), again = median.back();
      std::printf(" %.2f | %.2f |\n", *lo / *hi, std::min(first, again) / std::max(first, again));
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage(a + " needs a value");
    const char* v = argv[++i];
    if (a == "--np") o.np = std::atoi(v);
    else if (a == "-b") o.min_bytes = size_arg(v);
    else if (a == "-e") o.max_bytes = size_arg(v);
    else if (a == "-f") o.factor = std::atof(v);
    else if (a == "-n") o.iters = std::atoi(v);
    else if (a == "-w") o.warmup = std::atoi(v);
    else if (a == "--rounds") o.rounds = std::atoi(v);
    else if (a == "-R") o.registered = std::atoi(v);
    else if (a == "--collectives") {
      o.collectives.clear();
      std::stringstream list(v);
      for (std::string c; std::getline(list, c, ',');) o.collectives.push_back((collective_arg(c), c));
    } else {
      usage("unknown option " + a);
    }
  }
  if (o.np < 2 || o.iters < 1 || o.warmup < 0 || o.rounds < 1 || o.factor <= 1 || o.min_bytes > o.max_bytes)
    usage("need --np >= 2, -n >= 1, -w >= 0, --rounds >= 1, -f > 1, -b <= -e");
  int failed = bench::run_local_job(o.np, 1, [&](const std::vector<xcclUniqueId>& ids, int r) {
    xcclComm_t comm = nullptr;
    if (xcclCommInitRank(&comm, o.np, ids[0], r) != xcclSuccess) {
      std::fprintf(stderr, "placement: rank %d: %s\n", r, xcclGetLastError());
      return 1;
    }
    int rc = run_rank(o, comm, r);
    if (rc) std::fprintf(stderr, "placement: rank %d: %s\n", r, xcclGetLastError());
    xcclCommDestroy(comm);
    return rc;
  });
  return failed ? 1 : 0;
}
