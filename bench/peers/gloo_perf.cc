// gloo_perf: Gloo (TCP transport) measured like xccl-perf, for the side-by-side
// benchmarks. Forks --np rank processes on 127.0.0.1 that meet through a FileStore in a
// fresh temporary directory; or, under a launcher (RANK and WORLD_SIZE set, e.g. by
// `xm testbed run`), runs as that one rank on --addr, meeting the others in --store (a
// directory every rank sees). Rank 0 prints xccl-perf's out-of-place columns (float,
// sum). Each size is checked once: every rank sends rank+1 everywhere.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace {

struct Options {
  std::string collective = "all_reduce";
  int np = 2, iters = 20, warmup = 5;
  size_t min_bytes = 32 << 20, max_bytes = 32 << 20;
  double factor = 2;
  std::string addr = "127.0.0.1";  // the address Gloo's TCP device binds
  std::string store;               // launcher mode: the FileStore directory
  bool np_given = false;
};

[[noreturn]] void usage() {
  std::fprintf(stderr,
               "usage: gloo_perf --collective all_reduce|all_gather|alltoall|reduce_scatter --np N "
               "-b MIN -e MAX -f FACTOR -n ITERS -w WARMUP [--addr A] [--store DIR]   (sizes like 4096, 4K, 256M, 1G)\n"
               "  under a launcher (RANK, WORLD_SIZE set) without --np: one rank, --store required\n");
  std::exit(2);
}

size_t parse_bytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  std::string unit = end;
  double mult = unit.empty() ? 1 : unit == "K" || unit == "k" ? 1 << 10
                                 : unit == "M" || unit == "m" ? 1 << 20
                                 : unit == "G" || unit == "g" ? 1 << 30 : -1;
  if (end == s || mult < 0 || v < 0) usage();
  return size_t(v * mult);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage();
    const char* v = argv[++i];
    if (a == "--collective") o.collective = v;
    else if (a == "--np") o.np = std::atoi(v), o.np_given = true;
    else if (a == "--addr") o.addr = v;
    else if (a == "--store") o.store = v;
    else if (a == "-b") o.min_bytes = parse_bytes(v);
    else if (a == "-e") o.max_bytes = parse_bytes(v);
    else if (a == "-f") o.factor = std::atof(v);
    else if (a == "-n") o.iters = std::atoi(v);
    else if (a == "-w") o.warmup = std::atoi(v);
    else usage();
  }
  bool known = o.collective == "all_reduce" || o.collective == "all_gather" || o.collective == "alltoall" ||
               o.collective == "reduce_scatter";
  if (!known || o.np < 1 || o.iters < 1 || o.warmup < 0 || o.factor <= 1 || o.min_bytes > o.max_bytes) usage();
  return o;
}

// Gloo's element-wise reductions are overloaded; this picks the (out, in1, in2, n) form.
using ReduceFn = void (*)(void*, const void*, const void*, size_t);

// Reduces one double over all ranks (max or sum) with Gloo itself.
double all_reduce_scalar(const std::shared_ptr<gloo::Context>& ctx, double v, bool max) {
  gloo::AllreduceOptions opts(ctx);
  opts.setOutput(&v, 1);
  opts.setReduceFunction(max ? ReduceFn(&gloo::max<double>) : ReduceFn(&gloo::sum<double>));
  gloo::allreduce(opts);
  return v;
}

int run_rank(const Options& o, int rank, const std::string& dir) {
  gloo::transport::tcp::attr attr(o.addr.c_str());
  attr.ai_family = AF_INET;
  auto dev = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore file_store(dir);
  gloo::rendezvous::PrefixStore store("gloo_perf", file_store);
  auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, o.np);
  ctx->setTimeout(std::chrono::minutes(10));  // 256 MiB over loopback on 2 cores is slow
  ctx->connectFullMesh(store, dev);

  const int n = o.np;
  const bool scaled = o.collective != "all_reduce";  // size = per-rank count * 4 B * nranks
  const bool reducing = o.collective == "all_reduce" || o.collective == "reduce_scatter";
  const double bus = o.collective == "all_reduce" ? 2.0 * (n - 1) / n : double(n - 1) / n;
  // Buffers for the largest size, allocated and touched once; the input never changes.
  size_t max_elems = (o.max_bytes / sizeof(float) / n + 1) * n;
  std::vector<float> send(max_elems, float(rank + 1)), recv(max_elems);

  if (rank == 0) {
    std::printf("# gloo_perf: %s, %d ranks, float %s, %d iterations after %d warm-up, tcp %s\n",
                o.collective.c_str(), n, reducing ? "sum" : "none", o.iters, o.warmup, o.addr.c_str());
    std::printf("#\n#%77s\n", "out-of-place");
    std::printf("#%11s %12s %8s %6s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "root", "time",
                "algbw", "busbw", "#wrong");
    std::printf("#%11s %12s %8s %6s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)",
                "(GB/s)", "");
  }
  long long wrong_total = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes;
       bytes = size_t(std::max<double>(bytes * o.factor, bytes + 1))) {
    size_t total = bytes / sizeof(float) / (scaled ? n : 1) * (scaled ? n : 1);  // whole elements, whole blocks
    size_t per_rank = scaled ? total / n : total;
    std::function<void()> op;
    // Options are built once per size (binds the buffers), then reused for every call.
    if (o.collective == "all_reduce") {
      auto opts = std::make_shared<gloo::AllreduceOptions>(ctx);
      opts->setInput(send.data(), total);
      opts->setOutput(recv.data(), total);
      opts->setReduceFunction(ReduceFn(&gloo::sum<float>));
      op = [opts] { gloo::allreduce(*opts); };
    } else if (o.collective == "all_gather") {
      auto opts = std::make_shared<gloo::AllgatherOptions>(ctx);
      opts->setInput(send.data(), per_rank);
      opts->setOutput(recv.data(), total);
      op = [opts] { gloo::allgather(*opts); };
    } else if (o.collective == "alltoall") {
      auto opts = std::make_shared<gloo::AlltoallOptions>(ctx);
      opts->setInput(send.data(), total);
      opts->setOutput(recv.data(), total);
      op = [opts] { gloo::alltoall(*opts); };
    } else {
      // What PyTorch's Gloo backend does for reduce-scatter: all-reduce the whole buffer,
      // keep this rank's block (moved to the front). Gloo's own ReduceScatterHalvingDoubling
      // is not usable here: it overwrites a block while its send may still be reading it
      // (wrong sums at 64 MiB, 2 ranks, in one run of three) and sums wrongly at 3 ranks.
      auto opts = std::make_shared<gloo::AllreduceOptions>(ctx);
      opts->setInput(send.data(), total);
      opts->setOutput(recv.data(), total);
      opts->setReduceFunction(ReduceFn(&gloo::sum<float>));
      float* own = recv.data() + size_t(rank) * per_rank;
      op = [opts, own, out = recv.data(), per_rank] {
        gloo::allreduce(*opts);
        std::memmove(out, own, per_rank * sizeof(float));
      };
    }
    // Check once: all_reduce and reduce_scatter give n(n+1)/2 everywhere; block j of
    // all_gather and alltoall comes from rank j.
    const bool reduce_scatter = o.collective == "reduce_scatter";
    std::fill_n(recv.data(), total, -1.0f);
    op();
    long long wrong = 0;
    for (size_t i = 0; i < (reduce_scatter ? per_rank : total); ++i) {
      float want = reducing ? float(n * (n + 1) / 2) : float(i / per_rank + 1);
      wrong += recv[i] != want;
    }
    for (int i = 0; i < o.warmup; ++i) op();
    wrong = (long long)all_reduce_scalar(ctx, double(wrong), false);  // also lines the ranks up
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < o.iters; ++i) op();
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.iters;
    seconds = all_reduce_scalar(ctx, seconds, true);  // the slowest rank sets the pace
    wrong_total += wrong;
    if (rank == 0) {
      size_t size = total * sizeof(float);
      double algbw = size / seconds / 1e9;
      std::printf(" %11zu %12zu %8s %6s %6s %9.2f %7.2f %7.2f %6lld\n", size, total, "float",
                  reducing ? "sum" : "none", "-1", seconds * 1e6, algbw, algbw * bus, wrong);
      std::fflush(stdout);
    }
    if (bytes == o.max_bytes) break;
  }
  if (rank == 0) std::printf("# Out of bounds values : %lld %s\n#\n", wrong_total, wrong_total ? "FAILED" : "OK");
  std::fflush(stdout);
  return wrong_total ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  const char *env_rank = std::getenv("RANK"), *env_size = std::getenv("WORLD_SIZE");
  if (!o.np_given && env_rank && env_size) {  // one rank of a launched job
    if (o.store.empty()) {
      std::fprintf(stderr, "gloo_perf: under a launcher, --store DIR (a directory every rank sees) is required\n");
      return 2;
    }
    o.np = std::atoi(env_size);
    try {
      return run_rank(o, std::atoi(env_rank), o.store);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gloo_perf: rank %s: %s\n", env_rank, e.what());
      return 1;
    }
  }
  char tmpl[] = "/tmp/gloo_perf.XXXXXX";
  if (!mkdtemp(tmpl)) {
    std::perror("gloo_perf: mkdtemp");
    return 1;
  }
  std::string dir = tmpl;
  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int rank = 0; rank < o.np; ++rank) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("gloo_perf: fork");
      return 1;
    }
    if (pid == 0) {
      int rc = 1;
      try {
        rc = run_rank(o, rank, dir);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "gloo_perf: rank %d: %s\n", rank, e.what());
      }
      std::fflush(stdout);
      _exit(rc);
    }
    pids.push_back(pid);
  }
  // Wait for the ranks; if one fails the others would only hang, so stop them.
  int failed = 0;
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0) break;
    std::replace(pids.begin(), pids.end(), pid, pid_t(0));  // reaped
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) continue;
    std::fprintf(stderr, "gloo_perf: rank process %d failed (status %d)\n", int(pid), status);
    if (!failed++)
      for (pid_t p : pids)
        if (p) kill(p, SIGTERM);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return failed ? 1 : 0;
}
