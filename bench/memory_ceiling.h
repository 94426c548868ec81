// What bench/memory_ceiling's two halves share: options, the shared region's header
// (barrier, error count, where each rank's private input lies), the layout of the shared
// buffers, and the stores the ceilings time both ways.
#pragma once

#include <sched.h>
#include <sys/types.h>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ceiling {

enum class Collective { kAllReduce, kAllGather, kAllToAll };

struct Options {
  int np = 0;
  Collective collective = Collective::kAllReduce;
  bool private_bufs = false;  // --private
  size_t min_bytes = 32 << 20, max_bytes = 32 << 20;
  double factor = 2;
  int iters = 20, warmup = 5;
};

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

inline void barrier_wait(Barrier& b, int n, int& local_sense, const Spinner& s) {
  local_sense = !local_sense;
  if (b.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    b.remaining.store(n, std::memory_order_relaxed);
    b.sense.store(local_sense, std::memory_order_release);
    return;
  }
  for (int spins = 0; b.sense.load(std::memory_order_acquire) != local_sense;) s.spin(spins);
}

constexpr int kMaxRanks = 1024;

struct Shared {
  Barrier barrier;
  alignas(64) std::atomic<long long> wrong{0};
  // Private buffers: each rank's pid and input address, for peers that read it by
  // cross-memory attach (set before the first barrier).
  pid_t pid[kMaxRanks];
  uint64_t input[kMaxRanks];
};

// The shared region's buffers, max_count floats each. Shared mode: every rank's input and output.
// --private: stage[q] is rank q's staging buffer (all_reduce: slice p holds rank q's input slice
// p for rank p; the copy collectives: what rank q offers its peers) and (all_reduce) result holds
// slice q reduced by rank q; inputs and outputs are malloc'd by each rank.
struct Layout {
  std::vector<float*> in, out, stage;
  float* result = nullptr;
};

// Where the output goes. Cached stores keep the result in cache for the ranks that read it next,
// which wins while everything fits in the last-level cache; streaming (non-temporal) stores skip
// the read-for-ownership of each output line, which wins once the buffers spill to DRAM. A real
// collective may do either, so the ceilings time both and keep the faster.
#if defined(__SSE2__)
constexpr bool kHaveStreaming = true;  // SSE2 is part of every x86-64 CPU: no -march flag needed
#else
constexpr bool kHaveStreaming = false;
#endif

// o[0, m) = s[0, m); o is 16-byte aligned whenever streaming is asked for.
inline void store_copy(float* __restrict o, const float* __restrict s, size_t m, bool stream) {
  size_t j = 0;
#if defined(__SSE2__)
  if (stream)
    for (; j + 4 <= m; j += 4) _mm_stream_ps(o + j, _mm_loadu_ps(s + j));
#endif
  std::memcpy(o + j, s + j, (m - j) * sizeof(float));
}

// Non-temporal stores are weakly ordered: fence them before the barrier publishes the data.
inline void store_fence(bool stream) {
#if defined(__SSE2__)
  if (stream) _mm_sfence();
#endif
  (void)stream;
}

// Rank r's input holds r + 1 + i % 8: exact in float, and a misplaced slice shows up.
inline float input_value(int r, size_t i) { return float(r + 1 + int(i % 8)); }

// Rank r's input (holding input_value) and output (zeros): with --private its own malloc'd
// memory, allocated after fork as a caller's would be, and touched here so that no page
// fault lands in a timed loop (malloc's 16-byte alignment suffices for the streaming
// stores, which start on lines); else its buffers in the shared region.
class RankBuffers {
 public:
  RankBuffers(int r, bool private_bufs, const Layout& L, size_t count) : owned_(private_bufs) {
    in = owned_ ? allocate(r, count) : L.in[size_t(r)];
    out = owned_ ? allocate(r, count) : L.out[size_t(r)];
    for (size_t i = 0; i < count; ++i) in[i] = input_value(r, i);
    std::fill(out, out + count, 0.0f);
  }
  ~RankBuffers() {
    if (owned_) std::free(in), std::free(out);
  }
  RankBuffers(const RankBuffers&) = delete;
  RankBuffers& operator=(const RankBuffers&) = delete;
  float* in = nullptr;
  float* out = nullptr;

 private:
  static float* allocate(int r, size_t count) {
    auto* p = static_cast<float*>(std::malloc(count * sizeof(float)));
    if (!p) {
      std::fprintf(stderr, "memory_ceiling: rank %d: malloc of %zu bytes failed\n", r, count * sizeof(float));
      std::_Exit(1);
    }
    return p;
  }
  bool owned_;
};

// Seconds per call of op() over o.iters calls after o.warmup, timed on this rank between
// barriers; every call ends in a barrier, so the slowest rank sets the pace.
template <typename Op, typename BarrierFn>
double time_calls(const Options& o, Op&& op, BarrierFn&& barrier) {
  for (int i = 0; i < o.warmup; ++i) op();
  barrier();
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.iters; ++i) op();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.iters;
}

// One rank's whole sweep; rank 0 prints. Return the process exit code.
int run_all_reduce_rank(int r, const Options& o, Shared& sh, const Layout& L, size_t max_count, const Spinner& spinner);
int run_copy_rank(int r, const Options& o, Shared& sh, const Layout& L, size_t max_count, const Spinner& spinner);

}  // namespace ceiling
