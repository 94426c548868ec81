// The copy collectives' half of memory_ceiling (--collective all_gather | alltoall): the
// fastest all-gather or all-to-all this host's memory permits, nccl-tests' sizes (S is
// all-gather's output and all-to-all's buffer; a block is S/N).
//
// Shared buffers (the ceiling for registered memory): every input lies in one shared
// mapping; rank r copies its own block home and every peer's block straight out of the
// peer's input, once.
//
// --private (plain malloc'd buffers, which no peer can map): the least any library can do
// is copy its own block home and have each peer's block copied once, by the kernel, from
// the peer's memory into its output (cross-memory attach, process_vm_readv: what Open MPI's
// and xccl's shared-memory transports do for large messages); or, in user space, copy every
// block twice, into shared staging and out of it. Both are timed, each with cached and with
// streaming stores for the copies home, and the fastest counts ("how" column). The phases
// run one after another, so a pipelined algorithm can come close, not much past.
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "memory_ceiling.h"

namespace ceiling {

int run_copy_rank(int r, const Options& o, Shared& sh, const Layout& L, size_t max_count, const Spinner& spinner) {
  const int n = o.np;
  const bool priv = o.private_bufs, all_to_all = o.collective == Collective::kAllToAll;
  int sense = 0;
  auto barrier = [&] { barrier_wait(sh.barrier, n, sense, spinner); };
  RankBuffers buffers(r, priv, L, max_count);
  float* const in = buffers.in;
  float* const out = buffers.out;
  ::prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);  // for Yama's ptrace_scope 1; else a no-op
  sh.pid[r] = ::getpid();
  sh.input[r] = uint64_t(reinterpret_cast<uintptr_t>(in));
  barrier();

  const char* name = all_to_all ? "alltoall" : "all_gather";
  if (r == 0) {
    std::printf("# memory_ceiling: %s floor traffic, %d ranks (processes), %s, float, %d iterations after %d warm-up\n",
                name, n, priv ? "private buffers (cross-memory attach, or staged through shared memory)" : "shared buffers",
                o.iters, o.warmup);
    std::printf("#%12s %10s %8s %8s %14s\n", "size", "time", "algbw", "busbw", "how");
    std::printf("#%12s %10s %8s %8s %14s\n", "(B)", "(us)", "(GB/s)", "(GB/s)", "");
  }
  const double bus = double(n - 1) / n;  // nccl-tests' factor for both
  auto next = [&](size_t b) { return double(b) * o.factor > double(o.max_bytes) ? o.max_bytes + 1
                                     : std::max(b + 1, size_t(double(b) * o.factor)); };
  bool cma_works = priv;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = next(bytes)) {
    const size_t block = bytes / sizeof(float) / size_t(n) / 16 * 16;  // whole lines, so streaming stores align
    if (block == 0) continue;
    // Where rank q's block for rank p starts in q's input (all-gather: q has one block).
    auto offered = [&](int p) { return all_to_all ? size_t(p) * block : 0; };
    bool stream = false;
    auto home = [&] { store_copy(out + size_t(r) * block, in + offered(r), block, stream); };
    auto shared_copy = [&] {
      home();
      for (int k = 1; k < n; ++k) {
        int q = (r + k) % n;
        std::memcpy(out + size_t(q) * block, L.in[q] + offered(r), block * sizeof(float));
      }
      store_fence(stream);
      barrier();
    };
    auto pulled = [&] {
      home();
      for (int k = 1; k < n; ++k) {
        int q = (r + k) % n;
        iovec local{out + size_t(q) * block, block * sizeof(float)};
        iovec remote{reinterpret_cast<void*>(uintptr_t(sh.input[q] + offered(r) * sizeof(float))), block * sizeof(float)};
        if (::process_vm_readv(sh.pid[q], &local, 1, &remote, 1, 0) != ssize_t(block * sizeof(float))) cma_works = false;
      }
      store_fence(stream);
      barrier();
    };
    auto staged = [&] {
      for (int k = 1; k < n; ++k) {
        int p = (r + k) % n;
        if (all_to_all || k == 1) std::memcpy(L.stage[r] + offered(p), in + offered(p), block * sizeof(float));
      }
      barrier();
      home();
      for (int k = 1; k < n; ++k) {
        int q = (r + k) % n;
        std::memcpy(out + size_t(q) * block, L.stage[q] + offered(r), block * sizeof(float));
      }
      store_fence(stream);
      barrier();
    };
    auto timed = [&](auto&& op) { return time_calls(o, op, barrier); };
    // One call on a poisoned output: the first, middle and last element of every block.
    auto check = [&](auto&& op) {
      std::fill(out, out + size_t(n) * block, -1.0f);
      barrier();
      op();
      long long wrong = 0;
      for (int q = 0; q < n; ++q)
        for (size_t i : {size_t(0), block / 2, block - 1})
          if (out[size_t(q) * block + i] != input_value(q, offered(r) + i)) ++wrong;
      if (wrong) std::fprintf(stderr, "memory_ceiling: rank %d: %lld wrong elements at %zu bytes\n", r, wrong, bytes);
      sh.wrong += wrong;
    };
    double best = 1e30;
    std::string how;
    auto consider = [&](const char* what, auto&& op) {
      for (bool st : {false, true}) {
        if (st && !kHaveStreaming) break;
        stream = st;
        check(op);
        double t = timed(op);
        if (t < best) best = t, how = std::string(what) + (st ? "+stream" : "");
      }
    };
    if (!priv) {
      consider("in place", shared_copy);
    } else {
      if (cma_works) consider("cma", pulled);
      consider("staged", staged);
    }
    if (r == 0) {
      const double size = double(block * sizeof(float)) * n, algbw = size / best / 1e9;
      std::printf(" %12zu %10.2f %8.2f %8.2f %14s\n", block * sizeof(float) * size_t(n), best * 1e6, algbw, algbw * bus,
                  how.c_str());
      std::fflush(stdout);
    }
  }
  barrier();
  if (r == 0) std::printf("# Out of bounds values : %lld %s\n#\n", sh.wrong.load(), sh.wrong ? "FAILED" : "OK");
  std::fflush(stdout);
  return sh.wrong ? 1 : 0;
}

}  // namespace ceiling
