// memory_ceiling: the fastest fp32-sum all-reduce this host's memory system permits for N ranks
// in N processes, as a measured ceiling for bench/collectives_side_by_side.sh.
//
//   memory_ceiling --np N [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] [-w WARMUP]
//
// The N processes share one region holding every rank's input and output. Per iteration rank r
// sums slice r of all N inputs straight into slice r of its own output (each input byte is read
// once, overall), then after a barrier copies the other ranks' reduced slices from their outputs
// into its own. No all-reduce touches less memory: read the inputs once, write each rank's
// result once, read each reduced slice by the N-1 other ranks. Each size is timed with cached and
// with streaming stores and the faster counts ("stores" column). The "copy" columns time one plain
// memcpy of S bytes from a peer's input, all N ranks at once: what a single-copy transfer costs.
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

namespace {

[[noreturn]] void usage(const std::string& why, int code = 2) {
  std::fprintf(code ? stderr : stdout,
               "memory_ceiling: %s\nusage: memory_ceiling --np N [-b MIN] [-e MAX] [-f FACTOR] [-n ITERS] "
               "[-w WARMUP]   (sizes like 4096, 64K, 256M, 1G; N >= 2)\n",
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

// Spin on a shared word with pause; when ranks outnumber CPUs (4 ranks on a 2-CPU host) a
// waiting rank must hand its CPU to the rank it waits for, so it yields from the first spin.
struct Spinner {
  int budget;  // pause iterations before each sched_yield
  void spin(int& spins) const {
    if (++spins < budget) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      sched_yield();
      spins = 0;
    }
  }
};

// Sense-reversing barrier in the shared region; lock-free atomics work across processes.
struct Barrier {
  alignas(64) std::atomic<int> remaining;
  alignas(64) std::atomic<int> sense{0};
};

void barrier_wait(Barrier& b, int n, int& local_sense, const Spinner& s) {
  local_sense = !local_sense;
  if (b.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    b.remaining.store(n, std::memory_order_relaxed);
    b.sense.store(local_sense, std::memory_order_release);
    return;
  }
  for (int spins = 0; b.sense.load(std::memory_order_acquire) != local_sense;) s.spin(spins);
}

struct Shared {
  Barrier barrier;
  alignas(64) std::atomic<long long> wrong{0};
};

// Where the output goes. Cached stores keep the result in cache for the ranks that read it next,
// which wins while everything fits in the last-level cache; streaming (non-temporal) stores skip
// the read-for-ownership of each output line, which wins once the buffers spill to DRAM. A real
// all-reduce may do either, so the ceiling times both and keeps the faster.
#if defined(__SSE2__)
constexpr bool kHaveStreaming = true;  // SSE2 is part of every x86-64 CPU: no -march flag needed
#else
constexpr bool kHaveStreaming = false;
#endif

// o[0, m) = s + z; o is 16-byte aligned whenever streaming is asked for.
void store_sum(float* __restrict o, const float* __restrict s, const float* __restrict z, size_t m, bool stream) {
  size_t j = 0;
#if defined(__SSE2__)
  if (stream)
    for (; j + 4 <= m; j += 4) _mm_stream_ps(o + j, _mm_add_ps(_mm_loadu_ps(s + j), _mm_loadu_ps(z + j)));
#endif
  for (; j < m; ++j) o[j] = s[j] + z[j];
}

void store_copy(float* __restrict o, const float* __restrict s, size_t m, bool stream) {
  size_t j = 0;
#if defined(__SSE2__)
  if (stream)
    for (; j + 4 <= m; j += 4) _mm_stream_ps(o + j, _mm_loadu_ps(s + j));
#endif
  std::memcpy(o + j, s + j, (m - j) * sizeof(float));
}

// Non-temporal stores are weakly ordered: fence them before the barrier publishes the data.
void store_fence(bool stream) {
#if defined(__SSE2__)
  if (stream) _mm_sfence();
#endif
  (void)stream;
}

// out[lo, hi) = in[0] + ... + in[n-1] in one pass over memory: a block of the running sum stays in
// L1 while the next input is added, so each input is read from memory once and out written once.
void reduce_slice(float* out, const float* const* in, int n, size_t lo, size_t hi, bool stream) {
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
    store_sum(out + i, n > 2 ? acc : a, in[n - 1] + i, m, stream);
  }
}

// Rank r's input holds r + 1 + i % 8: exact in float, and a misplaced slice shows up.
float input_value(int r, size_t i) { return float(r + 1 + int(i % 8)); }
float sum_value(int n, size_t i) { return float(n * (n + 1) / 2 + n * int(i % 8)); }

struct Options {
  int np = 0;
  size_t min_bytes = 32 << 20, max_bytes = 32 << 20;
  double factor = 2;
  int iters = 20, warmup = 5;
};

struct Layout {
  std::vector<float*> in, out;  // per rank, max_count floats each
};

// One rank's whole sweep; rank 0 prints. Returns the process exit code.
int run_rank(int r, const Options& o, Shared& sh, const Layout& L, size_t max_count, const Spinner& spinner) {
  const int n = o.np;
  int sense = 0;
  auto barrier = [&] { barrier_wait(sh.barrier, n, sense, spinner); };
  for (size_t i = 0; i < max_count; ++i) L.in[r][i] = input_value(r, i);

  if (r == 0) {
    std::printf("# memory_ceiling: all_reduce floor traffic, %d ranks (processes), float sum, %d iterations after "
                "%d warm-up\n", n, o.iters, o.warmup);
    std::printf("#%12s %10s %8s %8s %8s %10s %9s\n", "size", "time", "algbw", "busbw", "stores", "copy", "copybw");
    std::printf("#%12s %10s %8s %8s %8s %10s %9s\n", "(B)", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)");
  }
  const double bus = 2.0 * (n - 1) / n;  // nccl-tests' all-reduce factor
  // The sizes xccl-perf and mpi_perf step through, so the rows line up.
  auto next = [&](size_t b) { return double(b) * o.factor > double(o.max_bytes) ? o.max_bytes + 1
                                     : std::max(b + 1, size_t(double(b) * o.factor)); };
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = next(bytes)) {
    const size_t count = bytes / sizeof(float);
    // Slices start on a cache line (16 floats), so streaming stores are aligned.
    auto slice = [&](int q) { return q == n ? count : count * size_t(q) / size_t(n) / 16 * 16; };
    bool stream = false;
    auto all_reduce = [&] {
      reduce_slice(L.out[r], L.in.data(), n, slice(r), slice(r + 1), stream);
      store_fence(stream);
      barrier();
      for (int q = 0; q < n; ++q)
        if (q != r) store_copy(L.out[r] + slice(q), L.out[q] + slice(q), slice(q + 1) - slice(q), stream);
      store_fence(stream);
      barrier();
    };
    auto copy = [&] {
      std::memcpy(L.out[r], L.in[(r + 1) % n], count * sizeof(float));
      barrier();
    };
    // Time `iters` calls on rank 0 between barriers; every call ends in a barrier, so the
    // slowest rank sets the pace.
    auto timed = [&](auto&& op) {
      for (int i = 0; i < o.warmup; ++i) op();
      barrier();
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters; ++i) op();
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
    };
    // Check one call on a poisoned output: the first, middle and last element of every slice.
    auto check = [&](auto&& op, auto&& want) {
      std::fill(L.out[r], L.out[r] + count, -1.0f);
      barrier();
      op();
      long long wrong = 0;
      for (int q = 0; q < n; ++q)
        for (size_t i : {slice(q), (slice(q) + slice(q + 1)) / 2, slice(q + 1) - 1})
          if (i >= slice(q) && i < slice(q + 1) && L.out[r][i] != want(i)) ++wrong;
      if (wrong) std::fprintf(stderr, "memory_ceiling: rank %d: %lld wrong elements at %zu bytes\n", r, wrong, bytes);
      sh.wrong += wrong;
    };

    double t = 0;
    bool best_stream = false;
    for (bool st : {false, true}) {
      if (st && !kHaveStreaming) break;
      stream = st;
      check(all_reduce, [&](size_t i) { return sum_value(n, i); });
      const double ts = timed(all_reduce);
      if (!st || ts < t) t = ts, best_stream = st;
    }
    check(copy, [&](size_t i) { return input_value((r + 1) % n, i); });
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

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "-h" || a == "--help") usage("the fastest all-reduce (float sum) this host's memory permits", 0);
    if (i + 1 >= argc) usage(a + " needs a value");
    const char* v = argv[++i];
    if (a == "--np") o.np = int(parse_int(a, v, 2, 1024));
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

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  const int n = o.np;
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  const size_t max_count = o.max_bytes / sizeof(float);
  const size_t stride = (max_count * sizeof(float) + page - 1) / page * page;
  const size_t header = (sizeof(Shared) + page - 1) / page * page;
  const size_t total = header + 2 * size_t(n) * stride;
  void* base = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    std::fprintf(stderr, "memory_ceiling: mmap of %zu bytes failed: %s\n", total, std::strerror(errno));
    return 1;
  }
  auto* sh = new (base) Shared;
  sh->barrier.remaining.store(n);
  Layout L;
  for (int q = 0; q < 2 * n; ++q)
    (q < n ? L.in : L.out).push_back(reinterpret_cast<float*>(static_cast<char*>(base) + header + size_t(q) * stride));

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
      _exit(run_rank(r, o, *sh, L, max_count, spinner));
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
