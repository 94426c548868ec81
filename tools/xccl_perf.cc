// xccl-perf: the nccl-tests of xccl. Same flags, same columns, same busbw factors.
//
//   xccl-perf [all_reduce|all_gather|reduce_scatter|alltoall|broadcast|reduce]
//             [-b MIN] [-e MAX] [-f FACTOR | -i STEP] [-n ITERS] [-w WARMUP] [-c 0|1]
//             [-o sum|prod|min|max|avg] [-d TYPE] [-r ROOT] [--np N]
//             [-R 0|1] [--send-offset BYTES] [--recv-offset BYTES]
//
// With --np N it launches N local ranks itself (hosting the bootstrap root); under
// torchrun, mpirun or srun it runs as one rank of the launcher's job.
#include <sys/wait.h>
#include <unistd.h>
#include <xccl/xccl.h>

extern char** environ;  // the process environment (POSIX)

#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ccl/check.h"
#include "ccl/launch.h"
#include "ccl/reduce.h"

namespace {

using namespace xm::ccl;

struct Options {
  std::string collective = "all_reduce";
  std::string min_bytes = "32M", max_bytes = "32M";
  double factor = 2;
  std::string increment = "0";
  int iters = 20, warmup = 5, check = 1, root = 0, np = 0, registered = 0;
  int cycles = 1;  // sweeps, each printed (0: until stopped)
  long send_offset = -1, recv_offset = -1;  // bytes past a page boundary; -1: as allocated
  std::string op = "sum", type = "float";
};

Collective parse_collective(const std::string& s) {
  static const std::pair<const char*, Collective> names[] = {
      {"all_reduce", Collective::kAllReduce}, {"all_gather", Collective::kAllGather},
      {"reduce_scatter", Collective::kReduceScatter}, {"alltoall", Collective::kAllToAll},
      {"broadcast", Collective::kBroadcast}, {"reduce", Collective::kReduce}};
  for (auto& [n, c] : names)
    if (s == n) return c;
  throw CLI::ValidationError("collective", "\"" + s + "\" is not all_reduce, all_gather, reduce_scatter, alltoall, broadcast or reduce");
}

size_t parse_bytes(const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  std::string unit = end;
  double mult = unit.empty() ? 1 : unit == "K" || unit == "k" ? 1 << 10 : unit == "M" || unit == "m" ? 1 << 20
              : unit == "G" || unit == "g" ? double(1 << 30) : -1;
  if (end == s.c_str() || mult < 0 || v < 0) throw CLI::ValidationError("size", "\"" + s + "\" is not a size like 8, 64K, 128M or 1G");
  return size_t(v * mult);
}

DataType parse_type(const std::string& s) {
  static const std::pair<const char*, DataType> names[] = {
      {"int8", DataType::kInt8}, {"uint8", DataType::kUint8}, {"int32", DataType::kInt32}, {"int", DataType::kInt32},
      {"int64", DataType::kInt64}, {"half", DataType::kFloat16}, {"float16", DataType::kFloat16},
      {"bfloat16", DataType::kBfloat16}, {"float", DataType::kFloat32}, {"float32", DataType::kFloat32},
      {"double", DataType::kFloat64}, {"float64", DataType::kFloat64}};
  for (auto& [n, t] : names)
    if (s == n) return t;
  throw CLI::ValidationError("-d", "\"" + s + "\" is not int8, uint8, int32, int64, half, bfloat16, float or double");
}

RedOp parse_op(const std::string& s) {
  static const char* names[] = {"sum", "prod", "min", "max", "avg"};
  for (int i = 0; i < 5; ++i)
    if (s == names[i]) return RedOp(i);
  throw CLI::ValidationError("-o", "\"" + s + "\" is not sum, prod, min, max or avg");
}

[[noreturn]] void die(const char* what, xcclResult_t r) {
  std::fprintf(stderr, "xccl-perf: %s: %s (%s)\n", what, xcclGetErrorString(r), xcclGetLastError());
  std::exit(1);
}
#define CHECK(call)                      \
  do {                                   \
    xcclResult_t r_ = (call);            \
    if (r_ != xcclSuccess) die(#call, r_); \
  } while (0)

// Runs one size, out of place or in place; returns (seconds per op, wrong elements).
// A buffer from malloc-like memory or from xcclMemAlloc, touched once.
class Buffer {
 public:
  // page_offset < 0: where malloc puts it; else that many bytes past a page boundary.
  Buffer(size_t bytes, bool registered, long page_offset)
      : bytes_(std::max<size_t>(bytes, 1)), registered_(registered), shift_(page_offset < 0 ? 0 : size_t(page_offset)) {
    if (registered_) {
      CHECK(xcclMemAlloc(reinterpret_cast<void**>(&base_), bytes_ + shift_));
    } else if (page_offset < 0) {
      base_ = static_cast<std::byte*>(std::malloc(bytes_));
      if (!base_) die("malloc", xcclSystemError);
    } else {
      base_ = static_cast<std::byte*>(std::aligned_alloc(4096, (bytes_ + shift_ + 4095) / 4096 * 4096));
      if (!base_) die("aligned_alloc", xcclSystemError);
    }
    std::memset(base_, 0, bytes_ + shift_);
  }
  ~Buffer() {
    if (registered_) xcclMemFree(base_);
    else std::free(base_);
  }
  std::byte* data() { return base_ + shift_; }

 private:
  size_t bytes_;
  bool registered_;
  size_t shift_;
  std::byte* base_ = nullptr;
};

// What one size's checked iterations write and expect, made once for both passes: made
// between them it would leave the network idle for as long as a reference takes to compute.
struct Reference {
  std::vector<std::byte> input, want;
};

std::pair<double, long long> run_size(const Options& o, const CollectiveArgs& a, const Reference& ref, Buffer& send,
                                      Buffer& recv, bool in_place, xcclComm_t comm) {
  const Collective c = a.collective;
  const int rank = a.rank, ranks = a.ranks;
  const size_t es = size_of(a.type), per_rank = a.count;
  size_t in_count = per_rank * (c == Collective::kReduceScatter || c == Collective::kAllToAll ? ranks : 1);
  std::byte* in = send.data();
  std::byte* out = recv.data();
  if (in_place) {  // NCCL's in-place layouts
    if (c == Collective::kAllGather) in = out + size_t(rank) * per_rank * es;
    else if (c == Collective::kReduceScatter) out = (in = recv.data()) + size_t(rank) * per_rank * es;
    else in = out;
  }
  long long wrong = 0;
  if (o.check > 0) {  // as nccl-tests' -c: that many iterations, each one checked
    const std::vector<std::byte>& want = ref.want;
    for (int it = 0; it < o.check; ++it) {
      std::memcpy(in, ref.input.data(), in_count * es);  // in place, the last iteration overwrote it
      CHECK(launch_collective(a, in, out, comm));
      if (std::memcmp(out, want.data(), want.size()) == 0) continue;  // exact: nothing to count (the usual case)
      for (size_t i = 0; i < want.size() / es; ++i) wrong += std::memcmp(out + i * es, want.data() + i * es, es) != 0;
    }
  }
  for (int i = 0; i < o.warmup; ++i) CHECK(launch_collective(a, in, out, comm));
  CHECK(xcclAllReduce(&wrong, &wrong, 1, xcclInt64, xcclSum, comm));  // also lines the ranks up
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) CHECK(launch_collective(a, in, out, comm));
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / o.iters;
  CHECK(xcclAllReduce(&seconds, &seconds, 1, xcclFloat64, xcclMax, comm));  // the slowest rank sets the pace
  return {seconds, wrong};
}

int run_rank(const Options& o, xcclComm_t comm) {
  int rank = 0, ranks = 1;
  CHECK(xcclCommUserRank(comm, &rank));
  CHECK(xcclCommCount(comm, &ranks));
  Collective c = parse_collective(o.collective);
  DataType type = parse_type(o.type);
  RedOp op = parse_op(o.op);
  const size_t es = size_of(type), min = parse_bytes(o.min_bytes), max = parse_bytes(o.max_bytes);
  const size_t step = parse_bytes(o.increment);
  const bool scaled = c == Collective::kAllGather || c == Collective::kReduceScatter || c == Collective::kAllToAll;
  const bool reducing = c == Collective::kAllReduce || c == Collective::kReduce || c == Collective::kReduceScatter;
  // Buffers for the largest size, allocated and touched once.
  size_t max_elems = (max / es / (scaled ? ranks : 1) + 1) * (scaled ? ranks : 1);
  Buffer send(max_elems * es, o.registered, o.send_offset), recv(max_elems * es, o.registered, o.recv_offset);
  if (rank == 0) {
    std::printf("# xccl-perf: %s, %d ranks, %s %s, %d iterations after %d warm-up, %s, %s buffers\n",
                o.collective.c_str(), ranks, to_string(type), reducing ? to_string(op) : "none", o.iters, o.warmup,
                o.check ? ("check on " + std::to_string(o.check) + " iteration(s) first").c_str() : "check off",
                o.registered ? "registered (xcclMemAlloc)" : "malloc");
    std::printf("#\n#%77s%31s\n", "out-of-place", "in-place");
    std::printf("#%11s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "root",
                "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
    std::printf("#%11s %12s %8s %6s %6s %9s %7s %7s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "", "(us)",
                "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
  }
  double busbw_sum = 0;
  int rows = 0;
  long long wrong_total = 0;
  for (int cycle = 0; o.cycles == 0 || cycle < o.cycles; ++cycle) {
    for (size_t bytes = min; bytes <= max; bytes = step ? bytes + step : size_t(std::max<double>(bytes * o.factor, bytes + 1))) {
      size_t total = bytes / es / (scaled ? ranks : 1) * (scaled ? ranks : 1);  // whole elements, whole blocks
      size_t per_rank = scaled ? total / ranks : total;
      size_t size = total * es;
      CollectiveArgs a;
      a.collective = c;
      a.count = per_rank;
      a.type = type;
      a.op = op;
      a.root = o.root;
      a.ranks = ranks;
      a.rank = rank;
      Reference ref;
      if (o.check > 0) ref = {check::make_input(a, rank), check::expected_output(a, rank)};
      auto [t_out, w_out] = run_size(o, a, ref, send, recv, false, comm);
      auto [t_in, w_in] = run_size(o, a, ref, send, recv, true, comm);
      double f = bus_factor(c, ranks);
      double alg_out = size / t_out / 1e9, alg_in = size / t_in / 1e9;
      busbw_sum += alg_out * f + alg_in * f;
      rows += 2;
      wrong_total += w_out + w_in;
      if (rank == 0) {
        std::string root = c == Collective::kBroadcast || c == Collective::kReduce ? std::to_string(o.root) : "-1";
        std::printf(" %11zu %12zu %8s %6s %6s %9.2f %7.2f %7.2f %6lld %9.2f %7.2f %7.2f %6lld\n", size, total,
                    to_string(type), reducing ? to_string(op) : "none", root.c_str(), t_out * 1e6, alg_out, alg_out * f,
                    o.check ? w_out : -1, t_in * 1e6, alg_in, alg_in * f, o.check ? w_in : -1);
        std::fflush(stdout);
      }
      if (bytes == max) break;
    }
  }
  if (rank == 0) {
    std::printf("# Out of bounds values : %lld %s\n", wrong_total, wrong_total ? "FAILED" : "OK");
    std::printf("# Avg bus bandwidth    : %g\n#\n", rows ? busbw_sum / rows : 0.0);
  }
  return wrong_total ? 1 : 0;
}

// --np N: this process hosts the bootstrap root and starts N copies of itself as ranks.
int launch_local(int np, char** argv) {
  xcclUniqueId id;
  CHECK(xcclGetUniqueId(&id));
  // Each child's environment is built before fork: between fork and exec a child of this
  // (now multi-threaded) process must not allocate.

  std::vector<std::vector<std::string>> envs(np);
  std::vector<std::vector<char*>> envps(np);
  for (int r = 0; r < np; ++r) {
    for (char** e = environ; *e; ++e) {
      std::string kv = *e;
      if (kv.rfind("XCCL_UNIQUE_ID=", 0) && kv.rfind("XCCL_RANK=", 0) && kv.rfind("XCCL_WORLD_SIZE=", 0) &&
          kv.rfind("XCCL_LOCAL_RANK=", 0))
        envs[r].push_back(kv);
    }
    envs[r].push_back(std::string("XCCL_UNIQUE_ID=") + id.internal);
    envs[r].push_back("XCCL_RANK=" + std::to_string(r));
    envs[r].push_back("XCCL_WORLD_SIZE=" + std::to_string(np));
    envs[r].push_back("XCCL_LOCAL_RANK=" + std::to_string(r));
    for (std::string& kv : envs[r]) envps[r].push_back(kv.data());
    envps[r].push_back(nullptr);
  }
  std::vector<pid_t> children;
  for (int r = 0; r < np; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::perror("xccl-perf: fork");
      return 1;
    }
    if (pid == 0) {
      execve("/proc/self/exe", argv, envps[r].data());
      _exit(127);
    }
    children.push_back(pid);
  }
  int failures = 0;
  for (size_t done = 0; done < children.size(); ++done) {
    int status = 0;
    pid_t pid = wait(&status);
    bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok) {
      ++failures;
      std::fprintf(stderr, "xccl-perf: rank process %d %s %d\n", int(pid),
                   WIFSIGNALED(status) ? "killed by signal" : "exited with", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    }
  }
  return failures ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"xccl-perf: measure xccl collectives the way nccl-tests measures NCCL"};
  app.add_option("collective", o.collective, "all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce")
      ->capture_default_str();
  app.add_option("-b,--minbytes", o.min_bytes, "smallest size (8, 64K, 128M, 1G)")->capture_default_str();
  app.add_option("-e,--maxbytes", o.max_bytes, "largest size")->capture_default_str();
  app.add_option("-f,--stepfactor", o.factor, "multiply the size by this each step")->capture_default_str();
  app.add_option("-i,--stepbytes", o.increment, "add this to the size each step (instead of -f)");
  app.add_option("-n,--iters", o.iters, "timed iterations per size")->capture_default_str();
  app.add_option("-w,--warmup_iters", o.warmup, "untimed iterations first")->capture_default_str();
  app.add_option("-c,--check", o.check, "iterations whose results are checked exactly, before the timed ones (0: none)")
      ->capture_default_str();
  app.add_option("-N,--run_cycles", o.cycles, "run and print the sweep this many times (0: until stopped)")
      ->capture_default_str();
  app.add_option("-o,--op", o.op, "sum, prod, min, max, avg")->capture_default_str();
  app.add_option("-d,--datatype", o.type, "int8, uint8, int32, int64, half, bfloat16, float, double")->capture_default_str();
  app.add_option("-r,--root", o.root, "root of broadcast and reduce")->capture_default_str();
  app.add_option("-R,--registered", o.registered, "1: buffers from xcclMemAlloc (read in place on shared memory)")
      ->capture_default_str();
  app.add_option("--send-offset", o.send_offset, "place the send buffer this many bytes past a page boundary")
      ->check(CLI::Range(0, 4095));
  app.add_option("--recv-offset", o.recv_offset, "place the receive buffer this many bytes past a page boundary")
      ->check(CLI::Range(0, 4095));
  app.add_option("--np", o.np, "launch this many local ranks (else run as one rank of torchrun/mpirun/srun)");
  CLI11_PARSE(app, argc, argv);
  try {  // validate before launching anything
    parse_collective(o.collective), parse_type(o.type), parse_op(o.op);
    if (parse_bytes(o.min_bytes) > parse_bytes(o.max_bytes)) throw CLI::ValidationError("-b", "is larger than -e");
    if (o.iters < 1 || o.warmup < 0 || o.check < 0 || o.cycles < 0 || (o.factor <= 1 && o.increment == "0"))
      throw CLI::ValidationError("-n/-w/-c/-N/-f", "need -n >= 1, -w >= 0, -c >= 0, -N >= 0 and -f > 1 (or -i)");
  } catch (const CLI::Error& e) {
    return app.exit(e);
  }
  if (o.np > 0 && !std::getenv("XCCL_UNIQUE_ID")) return launch_local(o.np, argv);

  xcclComm_t comm = nullptr;
  if (const char* id_text = std::getenv("XCCL_UNIQUE_ID")) {
    if (!std::getenv("XCCL_RANK") || !std::getenv("XCCL_WORLD_SIZE")) {
      std::fprintf(stderr, "xccl-perf: XCCL_UNIQUE_ID needs XCCL_RANK and XCCL_WORLD_SIZE too\n");
      return 2;
    }
    xcclUniqueId id{};
    std::strncpy(id.internal, id_text, sizeof id.internal - 1);
    CHECK(xcclCommInitRank(&comm, std::atoi(std::getenv("XCCL_WORLD_SIZE")), id, std::atoi(std::getenv("XCCL_RANK"))));
  } else {
    CHECK(xcclCommInitFromEnv(&comm));
  }
  int rc = run_rank(o, comm);
  CHECK(xcclCommDestroy(comm));
  return rc;
}
