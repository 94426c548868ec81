// memory_ceiling: the fastest fp32-sum all-reduce (and, with --collective, all-gather or
// all-to-all: copy_ceiling.cc) this host's memory system permits for N ranks in N processes, as
// a measured ceiling for bench/collectives_side_by_side.sh.
//
//   memory_ceiling --np N [--collective all_reduce|all_gather|alltoall] [--private]
//                  [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
//
// Default (shared buffers, the ceiling for registered memory): the N processes share one region
// holding every rank's input and output. Per iteration rank r sums slice r of all N inputs
// straight into slice r of its own output (each input byte is read once, overall), then after a
// barrier copies the other ranks' reduced slices from their outputs into its own. No all-reduce
// touches less memory: read the inputs once, write each rank's result once, read each reduced
// slice by the N-1 other ranks.
//
// --private (the ceiling for plain malloc'd buffers): each rank's input and output are its own
// malloc'd memory, which no peer can read, so every byte that crosses ranks goes through a shared
// staging region and is copied once per hop. Rank r copies slice p of its input to its staging
// buffer for every other rank p; barrier; sums its own input slice r with every peer's staged
// slice r, storing the result into its output and into the shared result buffer in one pass;
// barrier; copies the other ranks' results from the shared buffer into its output; barrier.
// That is the least traffic for private buffers, but the phases run one after another over whole
// slices, so it bounds phased algorithms only: a pipelined one that overlaps copy-in, reduction
// and copy-out through small cache-resident buffers can match or beat it.
//
// Each size is timed with cached and with streaming stores and the faster counts ("stores"
// column). The "copy" columns time one plain memcpy of S bytes from a peer's input (with
// --private, from the peer's staging buffer, which holds the same values), all N ranks at once:
// what a single-copy transfer costs.
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "memory_ceiling.h"

namespace ceiling {
namespace {

[[noreturn]] void usage(const std::string& why, int code = 2) {
  std::fprintf(code ? stderr : stdout,
               "memory_ceiling: %s\nusage: memory_ceiling --np N [--collective all_reduce|all_gather|alltoall] [--private] "
               "[-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]   (sizes like 4096, 64K, 256M, 1G; N >= 2; "
               "--private: malloc'd buffers)\n",
               why.c_str());
  std::exit(code);
}

size_t parse_bytes(const std::string& flag, const char* s) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  std::string unit = end;
  double mult = unit.empty() ? 1 : unit == "K" || unit == "k" ? 1 << 10 : unit == "M" || unit == "m" ? 1 << 20
              : unit == "G" || unit == "g" ? double(1 << 30) : -1;
  if (end == s || errno || mult < 0 || v < 0) usage(flag + " \"" + s + "\" is not a size like 8, 64K, 128M or 1G");
  return size_t(v * mult);
}

long parse_int(const std::string& flag, const char* s, long lo, long hi) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi)
    usage(flag + " \"" + s + "\" is not an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// o[0, m) = s + z, and the same into o2 unless it is null (one pass, two stores); o and o2 are
// 16-byte aligned whenever streaming is asked for.
void store_sum(float* __restrict o, float* __restrict o2, const float* __restrict s, const float* __restrict z,
               size_t m, bool stream) {
  size_t j = 0;
#if defined(__SSE2__)
  if (stream)
    for (; j + 4 <= m; j += 4) {
      const __m128 v = _mm_add_ps(_mm_loadu_ps(s + j), _mm_loadu_ps(z + j));
      _mm_stream_ps(o + j, v);
      if (o2) _mm_stream_ps(o2 + j, v);
    }
#endif
  if (o2)
    for (; j < m; ++j) o[j] = o2[j] = s[j] + z[j];
  else
    for (; j < m; ++j) o[j] = s[j] + z[j];
}

// out[lo, hi) = in[0] + ... + in[n-1] in one pass over memory: a block of the running sum stays in
// L1 while the next input is added, so each input is read from memory once and out (and out2, the
// shared copy with --private, unless null) written once.
void reduce_slice(float* out, float* out2, const float* const* in, int n, size_t lo, size_t hi, bool stream) {
  constexpr size_t kBlock = 2048;  // 8 KiB of floats: fits L1 next to the streamed inputs
  alignas(64) float acc[kBlock];
  for (size_t i = lo; i < hi; i += kBlock) {
    const size_t m = std::min(kBlock, hi - i);
    const float* __restrict a = in[0] + i;
    if (n > 2) {
      const float* __restrict b = in[1] + i;
      for (size_t j = 0; j < m; ++j) acc[j] = a[j] + b[j];
      for (int q = 2; q < n - 1; ++q) {
        const float* __restrict c = in[q] + i;
        for (size_t j = 0; j < m; ++j) acc[j] += c[j];
      }
    }
    store_sum(out + i, out2 ? out2 + i : nullptr, n > 2 ? acc : a, in[n - 1] + i, m, stream);
  }
}

float sum_value(int n, size_t i) { return float(n * (n + 1) / 2 + n * int(i % 8)); }

// One rank's whole sweep; rank 0 prints. Returns the process exit code.
}  // namespace

int run_all_reduce_rank(int r, const Options& o, Shared& sh, const Layout& L, size_t max_count, const Spinner& spinner) {
  const int n = o.np;
  const bool priv = o.private_bufs;
  int sense = 0;
  auto barrier = [&] { barrier_wait(sh.barrier, n, sense, spinner); };
  RankBuffers buffers(r, priv, L, max_count);
  float* const in = buffers.in;
  float* const out = buffers.out;
  // Phase 1 only ever rewrites a staging slice with the input's values, so after this copy each
  // staging buffer always holds its rank's whole input: the copy test below can read it.
  if (priv) std::memcpy(L.stage[r], in, max_count * sizeof(float));
  const std::vector<float*>& peer_in = priv ? L.stage : L.in;  // where a peer's input can be read

  if (r == 0) {
    std::printf("# memory_ceiling: all_reduce floor traffic, %d ranks (processes), %s, float sum, %d iterations "
                "after %d warm-up\n", n, priv ? "private buffers staged through shared memory" : "shared buffers",
                o.iters, o.warmup);
    std::printf("#%12s %10s %8s %8s %8s %10s %9s\n", "size", "time", "algbw", "busbw", "stores", "copy", "copybw");
    std::printf("#%12s %10s %8s %8s %8s %10s %9s\n", "(B)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)");
  }
  const double bus = 2.0 * (n - 1) / n;  // nccl-tests' all-reduce factor
  // The sizes xccl-perf and mpi_perf step through, so the rows line up.
  auto next = [&](size_t b) { return double(b) * o.factor > double(o.max_bytes) ? o.max_bytes + 1
                                     : std::max(b + 1, size_t(double(b) * o.factor)); };
  // The inputs rank r sums for its slice: all inputs, or with --private its own and the staged ones.
  std::vector<const float*> sources;
  for (int q = 0; q < n; ++q) sources.push_back(!priv ? L.in[q] : q == r ? in : L.stage[q]);
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = next(bytes)) {
    const size_t count = bytes / sizeof(float);
    // Slices start on a cache line (16 floats), so streaming stores are aligned.
    auto slice = [&](int q) { return q == n ? count : count * size_t(q) / size_t(n) / 16 * 16; };
    auto len = [&](int q) { return slice(q + 1) - slice(q); };
    bool stream = false;
    auto shared_all_reduce = [&] {
      reduce_slice(out, nullptr, sources.data(), n, slice(r), slice(r + 1), stream);
      store_fence(stream);
      barrier();
      for (int q = 0; q < n; ++q)
        if (q != r) store_copy(out + slice(q), L.out[q] + slice(q), len(q), stream);
      store_fence(stream);
      barrier();
    };
    auto private_all_reduce = [&] {
      for (int q = 0; q < n; ++q)
        if (q != r) store_copy(L.stage[r] + slice(q), in + slice(q), len(q), stream);
      store_fence(stream);
      barrier();
      reduce_slice(out, L.result, sources.data(), n, slice(r), slice(r + 1), stream);
      store_fence(stream);
      barrier();
      for (int q = 0; q < n; ++q)
        if (q != r) store_copy(out + slice(q), L.result + slice(q), len(q), stream);
      store_fence(stream);
      barrier();
    };
    auto all_reduce = [&] {
      if (priv) private_all_reduce();
      else shared_all_reduce();
    };
    auto copy = [&] {
      std::memcpy(out, peer_in[(r + 1) % n], count * sizeof(float));
      barrier();
    };
    auto timed = [&](auto&& op) { return time_calls(o, op, barrier); };
    // Check one call on a poisoned output: the first, middle and last element of every slice.
    // An all-reduce check also poisons the shared slices this rank writes, so a phase that
    // stores nothing cannot pass on the previous call's data.
    auto check = [&](auto&& op, auto&& want, bool poison_shared) {
      std::fill(out, out + count, -1.0f);
      if (priv && poison_shared) {
        for (int q = 0; q < n; ++q)
          if (q != r) std::fill(L.stage[r] + slice(q), L.stage[r] + slice(q + 1), -1.0f);
        std::fill(L.result + slice(r), L.result + slice(r + 1), -1.0f);
      }
      barrier();
      op();
      long long wrong = 0;
      for (int q = 0; q < n; ++q)
        for (size_t i : {slice(q), (slice(q) + slice(q + 1)) / 2, slice(q + 1) - 1})
          if (i >= slice(q) && i < slice(q + 1) && out[i] != want(i)) ++wrong;
      if (wrong) std::fprintf(stderr, "memory_ceiling: rank %d: %lld wrong elements at %zu bytes\n", r, wrong, bytes);
      sh.wrong += wrong;
    };

    double t = 0;
    bool best_stream = false;
    for (bool st : {false, true}) {
      if (st && !kHaveStreaming) break;
      stream = st;
      check(all_reduce, [&](size_t i) { return sum_value(n, i); }, true);
      const double ts = timed(all_reduce);
      if (!st || ts < t) t = ts, best_stream = st;
    }
    check(copy, [&](size_t i) { return input_value((r + 1) % n, i); }, false);
    const double tc = timed(copy);
    if (r == 0) {
      const double size = double(count * sizeof(float)), algbw = size / t / 1e9;
      std::printf(" %12zu %10.2f %8.2f %8.2f %8s %10.2f %9.2f\n", count * sizeof(float), t * 1e6, algbw, algbw * bus,
                  best_stream ? "stream" : "cached", tc * 1e6, size / tc / 1e9);
      std::fflush(stdout);
    }
  }
  barrier();  // every rank has added its wrong count
  if (r == 0) std::printf("# Out of bounds values : %lld %s\n#\n", sh.wrong.load(), sh.wrong ? "FAILED" : "OK");
  std::fflush(stdout);
  return sh.wrong ? 1 : 0;
}

namespace {

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("the fastest all-reduce (float sum) this host's memory permits", 0);
    if (a == "--private") {
      o.private_bufs = true;
      continue;
    }
    if (i + 1 >= argc) usage(a + " needs a value");
    const char* v = argv[++i];
    if (a == "--np") o.np = int(parse_int(a, v, 2, kMaxRanks));
    else if (a == "--collective") {
      std::string c = v;
      if (c == "all_reduce") o.collective = Collective::kAllReduce;
      else if (c == "all_gather") o.collective = Collective::kAllGather;
      else if (c == "alltoall") o.collective = Collective::kAllToAll;
      else usage("--collective \"" + c + "\" is not all_reduce, all_gather or alltoall");
    }
    else if (a == "-b") o.min_bytes = parse_bytes(a, v);
    else if (a == "-e") o.max_bytes = parse_bytes(a, v);
    else if (a == "-f") {
      char* end = nullptr;
      o.factor = std::strtod(v, &end);
      if (end == v || *end || !(o.factor > 1)) usage("-f \"" + std::string(v) + "\" is not a number greater than 1");
    }
    else if (a == "-n") o.iters = int(parse_int(a, v, 1, 1 << 30));
    else if (a == "-w") o.warmup = int(parse_int(a, v, 0, 1 << 30));
    else usage("unknown option " + a);
  }
  if (o.np == 0) usage("--np N is required");
  if (o.min_bytes < sizeof(float)) usage("-b must be at least 4 (one float)");
  if (o.min_bytes > o.max_bytes) usage("-b must not exceed -e");
  return o;
}

}  // namespace
}  // namespace ceiling

int main(int argc, char** argv) {
  using namespace ceiling;
  const Options o = parse(argc, argv);
  const int n = o.np;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t max_count = o.max_bytes / sizeof(float);
  const size_t stride = (max_count * sizeof(float) + page - 1) / page * page;
  const size_t header = (sizeof(Shared) + page - 1) / page * page;
  const size_t buffers = o.private_bufs ? size_t(n) + 1 : 2 * size_t(n);  // see Layout
  const size_t total = header + buffers * stride;
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    std::fprintf(stderr, "memory_ceiling: mmap of %zu bytes failed: %s\n", total, std::strerror(errno));
    return 1;
  }
  auto* sh = new (base) Shared;
  sh->barrier.remaining.store(n);
  Layout L;
  auto buffer = [&](size_t q) { return reinterpret_cast<float*>(static_cast<char*>(base) + header + q * stride); };
  for (int q = 0; q < n; ++q) {
    if (o.private_bufs) {
      L.stage.push_back(buffer(size_t(q)));
    } else {
      L.in.push_back(buffer(size_t(q)));
      L.out.push_back(buffer(size_t(n + q)));
    }
  }
  if (o.private_bufs) L.result = buffer(size_t(n));

  cpu_set_t cpus;
  const int ncpu = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  const Spinner spinner{n > ncpu ? 1 : 1 << 12};

  std::fflush(stdout);
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "memory_ceiling: fork failed: %s\n", std::strerror(errno));
      for (pid_t p : pids) kill(p, SIGKILL);
      return 1;
    }
    if (pid == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      // Fork does not copy the page tables of a shared mapping, so each rank maps every page
      // itself before timing (a first touch costs ~12 us per page on this VM).
#ifdef MADV_POPULATE_WRITE
      if (madvise(base, total, MADV_POPULATE_WRITE) != 0)  // Linux 5.14+; else touch every page
#endif
        for (size_t off = header; off < total; off += page)  // a write fault that keeps the data
          __atomic_fetch_add(static_cast<char*>(base) + off, 0, __ATOMIC_RELAXED);
      _exit(o.collective == Collective::kAllReduce ? run_all_reduce_rank(r, o, *sh, L, max_count, spinner)
                                                   : run_copy_rank(r, o, *sh, L, max_count, spinner));
    }
    pids.push_back(pid);
  }
  // A rank that dies would leave the others waiting in the barrier forever: stop them.
  int rc = 0;
  for (size_t left = pids.size(); left > 0; --left) {
    int status = 0;
    pid_t pid = wait(&status);
    if (pid < 0) break;
    if (rc || (WIFEXITED(status) && WEXITSTATUS(status) == 0)) continue;
    if (WIFSIGNALED(status)) std::fprintf(stderr, "memory_ceiling: a rank died of signal %d\n", WTERMSIG(status));
    rc = 1;
    for (pid_t p : pids)
      if (p != pid) kill(p, SIGKILL);
  }
  return rc;
}
