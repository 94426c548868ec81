// copy_kernels: the data path's copy and reduction kernels, alone, at every placement of
// the destination relative to the source.
//
//   copy_kernels [-b MIN] [-e MAX] [-f FACTOR] [--ms MILLISECONDS] [--rounds N]
//
// For each size (64 KiB, 1 MiB, 16 MiB by default) and each kernel — memcpy (what the
// shared-memory FIFOs and local copies use), copy_streaming (large write-only outputs),
// the kernel's cross-memory read (process_vm_readv, how a plain buffer crosses between
// ranks; here out of this process itself) and the reduction of every type (sum;
// dst = a op b, the shape every reduce step has) — it times the kernel with the source 16 bytes into a page (where malloc's large blocks
// start) and the destination 0, 16, 64, 512, 2048 and 4032 bytes past the source's page
// offset, and with both page-aligned, and prints GB/s (bytes of dst written per second)
// and slowest / fastest. One thread; each figure is the best call of --rounds rounds
// (5) of --ms milliseconds (20) each, every kernel and placement in turn within a round
// so that a slow spell of the machine hits them all alike; the buffers are warm (hot in
// cache where they fit), so a placement effect shows undiluted. A kernel whose speed depended on placement would show it here
// before any collective did (4 KiB aliasing between loads and stores in flight, fast-string
// microcode that slows for some source/destination distances).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ccl/copy.h"
#include "ccl/reduce.h"
#include "ccl/shm/cross_memory.h"

namespace {

using namespace xm::ccl;
using Clock = std::chrono::steady_clock;

struct Options {
  size_t min_bytes = 64 << 10, max_bytes = 16 << 20;
  double factor = 16;
  double ms = 20;
  int rounds = 5;
};

[[noreturn]] void usage(const std::string& why) {
  std::fprintf(stderr, "copy_kernels: %s\nusage: copy_kernels [-b MIN] [-e MAX] [-f FACTOR] [--ms MILLISECONDS] [--rounds N]\n",
               why.c_str());
  std::exit(2);
}

size_t parse_bytes(const char* s) {
  char* end = nullptr;
  double v = std::strtod(s, &end);
  std::string unit = end;
  double mult = unit.empty() ? 1 : unit == "K" ? 1 << 10 : unit == "M" ? 1 << 20 : unit == "G" ? double(1 << 30) : -1;
  if (end == s || mult < 0 || v <= 0) usage(std::string("\"") + s + "\" is not a size like 64K or 16M");
  return size_t(v * mult);
}

// A page-aligned block with room for `bytes` at any page offset.
struct Block {
  explicit Block(size_t bytes) : size((bytes + 8191) / 4096 * 4096), p(static_cast<std::byte*>(std::aligned_alloc(4096, size))) {
    std::memset(p, 1, size);
  }
  ~Block() { std::free(p); }
  size_t size;
  std::byte* p;
};

// Best seconds per call of f() over about `ms` milliseconds.
template <typename F>
double best_time(double ms, F&& f) {
  double best = 1e30;
  auto end = Clock::now() + std::chrono::duration<double, std::milli>(ms);
  int calls = 0;
  do {
    auto t0 = Clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
  } while (++calls < 3 || Clock::now() < end);
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) usage(a + " needs a value");
    const char* v = argv[++i];
    if (a == "-b") o.min_bytes = parse_bytes(v);
    else if (a == "-e") o.max_bytes = parse_bytes(v);
    else if (a == "-f") o.factor = std::atof(v);
    else if (a == "--ms") o.ms = std::atof(v);
    else if (a == "--rounds") o.rounds = std::atoi(v);
    else usage("unknown option " + a);
  }
  if (o.factor <= 1 || o.min_bytes > o.max_bytes || o.ms <= 0 || o.rounds < 1)
    usage("need -f > 1, -b <= -e, --ms > 0, --rounds >= 1");
  // (source page offset, destination page offset)
  const std::pair<size_t, size_t> places[] = {{16, 16}, {16, 32}, {16, 80}, {16, 528}, {16, 2064}, {16, 4048}, {0, 0}};
  Block a(o.max_bytes), b(o.max_bytes), d(o.max_bytes);

  struct Kernel {
    std::string name;
    size_t elem;
    void (*run)(std::byte* dst, const std::byte* a, const std::byte* b, size_t bytes, DataType t);
    DataType type;
  };
  std::vector<Kernel> kernels = {
      {"memcpy", 1, [](std::byte* d, const std::byte* s, const std::byte*, size_t n, DataType) { std::memcpy(d, s, n); },
       DataType::kUint8},
      {"copy_streaming", 1,
       [](std::byte* d, const std::byte* s, const std::byte*, size_t n, DataType) {
         copy_streaming(d, s, n);
         streaming_fence();
       },
       DataType::kUint8},
      {"cross-memory read", 1,
       [](std::byte* d, const std::byte* s, const std::byte*, size_t n, DataType) {
         if (!read_memory_of(::getpid(), uint64_t(reinterpret_cast<uintptr_t>(s)), d, n)) std::abort();
       },
       DataType::kUint8}};
  for (DataType t : {DataType::kInt8, DataType::kUint8, DataType::kInt32, DataType::kInt64, DataType::kFloat16,
                     DataType::kBfloat16, DataType::kFloat32, DataType::kFloat64})
    kernels.push_back({std::string("reduce ") + to_string(t) + " sum", size_of(t),
                       [](std::byte* d, const std::byte* x, const std::byte* y, size_t n, DataType ty) {
                         reduce(d, x, y, n / size_of(ty), ty, RedOp::kSum);
                       },
                       t});

  std::printf("# copy_kernels: GB/s of output at each placement, best call of %d rounds of %.0f ms\n", o.rounds, o.ms);
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes = size_t(double(bytes) * o.factor)) {
    // best[kernel][place], seconds per call
    std::vector<std::vector<double>> best(kernels.size(), std::vector<double>(std::size(places), 1e30));
    for (int round = 0; round < o.rounds; ++round)
      for (size_t k = 0; k < kernels.size(); ++k)
        for (size_t p = 0; p < std::size(places); ++p) {
          // The second operand sits where the destination does: reduce steps that write
          // in place read their own buffer at the same address they store to.
          auto [so, dof] = places[p];
          std::byte *src = a.p + so, *dst = d.p + dof, *other = b.p + dof;
          best[k][p] = std::min(best[k][p], best_time(o.ms, [&] { kernels[k].run(dst, src, other, bytes, kernels[k].type); }));
        }
    std::printf("\n%zu bytes\n| kernel |", bytes);
    for (auto [s, t] : places) std::printf(" %s |", s == t && s == 0 ? "both page-aligned" : ("dst +" + std::to_string(t - s)).c_str());
    std::printf(" slowest / fastest |\n|---|");
    for (size_t p = 0; p < std::size(places); ++p) std::printf("---:|");
    std::printf("---:|\n");
    for (size_t k = 0; k < kernels.size(); ++k) {
      std::printf("| %s |", kernels[k].name.c_str());
      double lo = 1e30, hi = 0;
      for (double t : best[k]) {
        double gbs = double(bytes) / t / 1e9;
        lo = std::min(lo, gbs), hi = std::max(hi, gbs);
        std::printf(" %.1f |", gbs);
      }
      std::printf(" %.2f |\n", lo / hi);
    }
    std::fflush(stdout);
  }
  return 0;
}
