// init_scale: what a job of N ranks over TCP costs to start, with data connections made
// when first needed (XCCL_RUNTIME_CONNECT=1, the default) against all made at init (=0).
//
//   init_scale [--np N] [--rounds R] [--collective all_reduce|alltoall] [--bytes B] [--only eager|lazy]
//
// Each round forks N ranks on loopback (XCCL_SHM_DISABLE=1, one rail), each timing
// xcclCommInitRank and then its first collective of B bytes (which, on demand, makes the
// connections it needs), and reporting its peak resident memory (VmHWM) and sockets after.
// The two settings alternate round by round. Prints per setting the medians over rounds of
// the slowest rank's init and first-collective times, the total peak memory of all ranks
// and the sockets per rank.
#include <xccl/xccl.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "local_job.h"

namespace {

using Clock = std::chrono::steady_clock;

struct RankReport {
  double init_ms = 0, first_ms = 0;
  int64_t peak_kib = 0;
  int sockets = 0;
  int ok = 0;
};

int64_t peak_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6);
  return 0;
}

int sockets() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    n += std::filesystem::read_symlink(e.path(), ec).string().rfind("socket:", 0) == 0;
  }
  return n;
}

// One rank: init and its first collective, timed; the report goes to `out`.
int rank_main(const xcclUniqueId& id, int rank, int ranks, bool alltoall, size_t bytes, int out) {
  RankReport r;
  auto t0 = Clock::now();
  xcclComm_t comm = nullptr;
  if (xcclCommInitRank(&comm, ranks, id, rank) != xcclSuccess) {
    std::fprintf(stderr, "rank %d: init: %s\n", rank, xcclGetLastError());
    return 1;
  }
  auto t1 = Clock::now();
  size_t count = bytes / sizeof(float);
  std::vector<float> in(alltoall ? count / ranks * ranks : count, 1.0f), res(in.size());
  xcclResult_t rc = alltoall ? xcclAllToAll(in.data(), res.data(), count / ranks, xcclFloat, comm)
                             : xcclAllReduce(in.data(), res.data(), count, xcclFloat, xcclSum, comm);
  auto t2 = Clock::now();
  r.ok = rc == xcclSuccess;
  if (!r.ok) std::fprintf(stderr, "rank %d: %s\n", rank, xcclGetLastError());
  r.init_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
  r.first_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  r.sockets = sockets();
  r.peak_kib = peak_kib();
  xcclCommDestroy(comm);
  return ::write(out, &r, sizeof r) == sizeof r && r.ok ? 0 : 1;
}

struct Round {
  double init_ms = 0, first_ms = 0, total_peak_mib = 0, sockets = 0;
};

Round run_round(int ranks, bool runtime_connect, bool alltoall, size_t bytes) {
  setenv("XCCL_RUNTIME_CONNECT", runtime_connect ? "1" : "0", 1);
  int report[2];  // every rank's report, read once all are done (64 of them fit in a pipe)
  if (::pipe(report) != 0) std::perror("pipe"), std::exit(1);
  int failed = bench::run_local_job(ranks, 1, [&](const std::vector<xcclUniqueId>& ids, int rank) {
    ::close(report[0]);
    return rank_main(ids[0], rank, ranks, alltoall, bytes, report[1]);
  });
  ::close(report[1]);
  if (failed) std::fprintf(stderr, "init_scale: %d rank(s) failed\n", failed), std::exit(1);
  Round out;
  for (int r = 0; r < ranks; ++r) {
    RankReport rep;
    if (::read(report[0], &rep, sizeof rep) != sizeof rep) std::fprintf(stderr, "init_scale: a report is missing\n"), std::exit(1);
    out.init_ms = std::max(out.init_ms, rep.init_ms);
    out.first_ms = std::max(out.first_ms, rep.first_ms);
    out.total_peak_mib += double(rep.peak_kib) / 1024;
    out.sockets += double(rep.sockets) / ranks;
  }
  ::close(report[0]);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int ranks = 64, rounds = 3;
  std::string only;  // "eager" or "lazy": one setting only
  bool alltoall = false;
  size_t bytes = 1 << 20;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) std::fprintf(stderr, "init_scale: %s needs a value\n", a.c_str()), std::exit(2);
    std::string v = argv[++i];
    if (a == "--np") ranks = std::atoi(v.c_str());
    else if (a == "--rounds") rounds = std::atoi(v.c_str());
    else if (a == "--bytes") bytes = size_t(std::atoll(v.c_str()));
    else if (a == "--only" && (v == "eager" || v == "lazy")) only = v;
    else if (a == "--collective" && (v == "all_reduce" || v == "alltoall")) alltoall = v == "alltoall";
    else std::fprintf(stderr, "init_scale: bad option %s %s\n", a.c_str(), v.c_str()), std::exit(2);
  }
  if (ranks < 2 || ranks > 256 || rounds < 1 || bytes < 4 * size_t(ranks))
    std::fprintf(stderr, "init_scale: --np 2..256, --rounds >= 1, --bytes >= 4 x ranks\n"), std::exit(2);
  setenv("XCCL_SHM_DISABLE", "1", 1);
  setenv("XCCL_RAILS", "127.0.0.1", 1);
  setenv("XCCL_DEBUG", "WARN", 0);
  std::vector<Round> eager, lazy;
  for (int r = 0; r < rounds; ++r) {
    eager.push_back(only == "lazy" ? Round{} : run_round(ranks, false, alltoall, bytes));
    lazy.push_back(only == "eager" ? Round{} : run_round(ranks, true, alltoall, bytes));
  }
  std::printf("# %d ranks over TCP on loopback, first collective %s of %zu bytes; medians of %d rounds, alternated\n",
              ranks, alltoall ? "alltoall" : "all_reduce", bytes, rounds);
  std::printf("%-22s %10s %17s %14s %16s %14s\n", "connections", "init_ms", "(min-max)", "first_coll_ms", "peak_mem_MiB",
              "sockets/rank");
  for (auto& [name, rs] : {std::pair{"all at init", &eager}, std::pair{"when first needed", &lazy}}) {
    auto pick = [&](double Round::*f) {
      std::vector<double> v;
      for (const Round& r : *rs) v.push_back(r.*f);
      return bench::median(v);
    };
    auto [lo, hi] = std::minmax_element(rs->begin(), rs->end(),
                                        [](const Round& a, const Round& b) { return a.init_ms < b.init_ms; });
    char spread[64];
    std::snprintf(spread, sizeof spread, "(%.0f-%.0f)", lo->init_ms, hi->init_ms);
    std::printf("%-22s %10.1f %17s %14.1f %16.0f %14.1f\n", name, pick(&Round::init_ms), spread, pick(&Round::first_ms),
                pick(&Round::total_peak_mib), pick(&Round::sockets));
  }
  return 0;
}
