// settings_ab: two sets of XCCL_ settings side by side in one launch, as a tuning decision
// should be measured on a machine whose speed drifts from one launch to the next.
//
//   settings_ab --np N --a "XCCL_CHUNK_BYTES=262144" --b "XCCL_CHUNK_BYTES=1048576"
//               [--collective all_reduce|all_gather|reduce_scatter|alltoall]
//               [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [--rounds R]
//
// Every rank makes two communicators of the same N local ranks, the first with A's
// variables in its environment, the second with B's (each read when the communicator is
// made, as every XCCL_ setting is; an empty string leaves the defaults), then for each size
// alternates the two, round after round, ITERS timed calls each (the slowest rank's
// time). Prints the median busbw (GB/s, fp32, sum, plain malloc'd buffers sized for the
// largest message, out of place) of each and B/A: above 1, B is faster.
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
  int np = 0, iters = 20, warmup = 5, rounds = 9;
  std::string a, b;
  Collective collective = Collective::kAllReduce;
  std::string collective_name = "all_reduce";
  size_t min_bytes = 64 << 10, max_bytes = 16 << 20;
  double factor = 4;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr,
               "settings_ab: %s\nusage: settings_ab --np N --a \"XCCL_X=v ...\" --b \"XCCL_X=w ...\" [--collective NAME] "
               "[-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP] [--rounds R]\n", why.c_str());
  std::exit(2);
}

// "XCCL_X=1 XCCL_Y=2" into the environment; each must be an XCCL_ variable.
void set_variables(const std::string& list) {
  std::istringstream in(list);
  for (std::string kv; in >> kv;) {
    size_t eq = kv.find('=');
    if (eq == std::string::npos || kv.rfind("XCCL_", 0) != 0) usage("\"" + kv + "\" is not XCCL_NAME=VALUE");
    ::setenv(kv.substr(0, eq).c_str(), kv.substr(eq + 1).c_str(), 1);
  }
}
void unset_variables(const std::string& list) {
  std::istringstream in(list);
  for (std::string kv; in >> kv;) ::unsetenv(kv.substr(0, kv.find('=')).c_str());
}

int run_rank(const Options& o, const std::vector<xcclUniqueId>& ids, int rank) {
  xcclComm_t comm[2] = {nullptr, nullptr};
  for (int k = 0; k < 2; ++k) {
    const std::string& vars = k == 0 ? o.a : o.b;
    set_variables(vars);
    if (xcclCommInitRank(&comm[k], o.np, ids[size_t(k)], rank) != xcclSuccess) {
      std::fprintf(stderr, "settings_ab: rank %d, communicator %c: %s\n", rank, "AB"[k], xcclGetLastError());
      return 1;
    }
    unset_variables(vars);
  }
  std::vector<std::byte> send(o.max_bytes + 64, std::byte{1}), recv(o.max_bytes + 64);
  if (rank == 0)
    std::printf("# settings_ab: %s, %d ranks, %d rounds of %d timed calls; A = \"%s\", B = \"%s\"\n#%11s %9s %9s %7s\n",
                o.collective_name.c_str(), o.np, o.rounds, o.iters, o.a.c_str(), o.b.c_str(), "size (B)", "A busbw",
                "B busbw", "B/A");
  const bool scaled = o.collective != Collective::kAllReduce;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = size_t(double(bytes) * o.factor)) {
    CollectiveArgs a;
    a.collective = o.collective;
    a.type = DataType::kFloat32;
    a.op = RedOp::kSum;
    a.ranks = o.np, a.rank = rank;
    a.count = bytes / 4 / (scaled ? o.np : 1);
    std::vector<double> busbw[2];
    for (int round = 0; round < o.rounds; ++round)
      for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < (round == 0 ? o.warmup : 1); ++i)
          if (launch_collective(a, send.data(), recv.data(), comm[k]) != xcclSuccess) return 1;
        double t = 0;
        if (xcclAllReduce(&t, &t, 1, xcclFloat64, xcclSum, comm[k]) != xcclSuccess) return 1;  // lines the ranks up
        auto t0 = std::chrono::steady_clock::now();
        for (int i = 0; i < o.iters; ++i)
          if (launch_collective(a, send.data(), recv.data(), comm[k]) != xcclSuccess) return 1;
        t = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
        if (xcclAllReduce(&t, &t, 1, xcclFloat64, xcclMax, comm[k]) != xcclSuccess) return 1;
        busbw[k].push_back(double(bytes) / t / 1e9 * xm::sched::bus_factor(o.collective, o.np));
      }
    if (rank != 0) continue;
    double m[2];
    for (int k = 0; k < 2; ++k) m[k] = bench::median(busbw[k]);
    std::printf(" %11zu %9.2f %9.2f %7.2f\n", bytes, m[0], m[1], m[1] / m[0]);
    std::fflush(stdout);
  }
  for (xcclComm_t c : comm) xcclCommDestroy(c);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (i + 1 >= argc) usage(arg + " needs a value");
    std::string v = argv[++i];
    auto size = [&] {
      if (std::optional<size_t> s = bench::parse_size(v)) return *s;
      usage("\"" + v + "\" is not a size like 64K or 16M");
    };
    if (arg == "--np") o.np = std::atoi(v.c_str());
    else if (arg == "--a") o.a = v;
    else if (arg == "--b") o.b = v;
    else if (arg == "--collective") {
      std::optional<Collective> c = bench::parse_collective(v);
      if (!c) usage("\"" + v + "\" is not all_reduce, all_gather, reduce_scatter or alltoall");
      o.collective = *c, o.collective_name = v;
    } else if (arg == "-b") o.min_bytes = size();
    else if (arg == "-e") o.max_bytes = size();
    else if (arg == "-f") o.factor = std::atof(v.c_str());
    else if (arg == "-n") o.iters = std::atoi(v.c_str());
    else if (arg == "-w") o.warmup = std::atoi(v.c_str());
    else if (arg == "--rounds") o.rounds = std::atoi(v.c_str());
    else usage("unknown option " + arg);
  }
  if (o.np < 2 || o.iters < 1 || o.warmup < 0 || o.rounds < 1 || o.factor <= 1 || o.min_bytes > o.max_bytes)
    usage("need --np >= 2, -n >= 1, -w >= 0, --rounds >= 1, -f > 1, -b <= -e");
  set_variables(o.a), unset_variables(o.a), set_variables(o.b), unset_variables(o.b);  // reject bad lists up front
  return bench::run_local_job(o.np, 2, [&](const std::vector<xcclUniqueId>& ids, int r) { return run_rank(o, ids, r); }) ? 1 : 0;
}
