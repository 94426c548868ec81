// xccl through its public API, ranks as real processes over shared memory: every
// collective × type × op, odd sizes, in place and out of place, checked exactly.
#include <gtest/gtest.h>

#include <filesystem>

#include <cstring>
#include <string>

#include "ccl/check.h"
#include "ccl/launch.h"
#include "process_world.h"

namespace xm::ccl {
namespace {

// Holds a test's buffer in malloc'd or registered (xcclMemAlloc) memory.
class TestBuffer {
 public:
  TestBuffer(const std::vector<std::byte>& init, size_t bytes, bool registered) : registered_(registered) {
    size_t n = std::max<size_t>(bytes, 1);
    if (registered_) {
      if (xcclMemAlloc(reinterpret_cast<void**>(&p_), n) != xcclSuccess) std::abort();
    } else {
      p_ = static_cast<std::byte*>(std::malloc(n));
    }
    std::memset(p_, 0, n);
    if (!init.empty()) std::memcpy(p_, init.data(), init.size());
  }
  ~TestBuffer() {
    if (registered_) xcclMemFree(p_);
    else std::free(p_);
  }
  std::byte* data() { return p_; }

 private:
  bool registered_;
  std::byte* p_ = nullptr;
};

#ifdef XM_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// One rank's sweep; returns 0 when every result matched.
int sweep(xcclComm_t comm, int rank, int ranks, const std::vector<uint64_t>& counts, bool registered = false,
          bool all_reduce_only = false) {
  for (int c = 0; c < (all_reduce_only ? 1 : 6); ++c) {
    Collective kind = Collective(c);
    bool reducing = kind == Collective::kAllReduce || kind == Collective::kReduce || kind == Collective::kReduceScatter;
    for (int t = 0; t < kDataTypes; ++t)
      for (int o = 0; o < (reducing ? kRedOps : 1); ++o)
        for (uint64_t count : counts)
          for (bool in_place : {false, true}) {
            // Every combination up to 64K elements (1001 under the sanitizers); the larger
            // sizes for a representative set of types and ops, to keep the suite within minutes.
            bool representative = (t == int(DataType::kFloat32) || t == int(DataType::kBfloat16) ||
                                   t == int(DataType::kInt8) || t == int(DataType::kFloat64)) &&
                                  (RedOp(o) == RedOp::kSum || RedOp(o) == RedOp::kAvg || RedOp(o) == RedOp::kMax);
            if (count > (kSanitized ? 10000u : 100000u) && !representative) continue;
            CollectiveArgs a;
            a.collective = kind;
            a.count = count;
            a.type = DataType(t);
            a.op = RedOp(o);
            a.ranks = ranks;
            a.rank = rank;
            a.root = ranks / 2;
            const size_t es = size_of(a.type);
            std::vector<std::byte> in0 = check::make_input(a, rank), want = check::expected_output(a, rank);
            size_t out_bytes = std::max(output_count(a), in0.size() / es) * es + 1;
            TestBuffer in(in0, in0.size(), registered), out({}, out_bytes, registered);
            const void* src = in.data();
            std::byte* dst = out.data();
            if (in_place) {
              if (kind == Collective::kAllGather) {
                src = out.data() + size_t(rank) * count * es;
                if (!in0.empty()) std::memcpy(out.data() + size_t(rank) * count * es, in0.data(), in0.size());
              } else if (kind == Collective::kReduceScatter) {
                if (!in0.empty()) std::memcpy(out.data(), in0.data(), in0.size());
                src = out.data();
                dst = out.data() + size_t(rank) * count * es;
              } else {
                if (!in0.empty()) std::memcpy(out.data(), in0.data(), in0.size());
                src = out.data();
              }
            }
            if (launch_collective(a, src, dst, comm) != xcclSuccess) {
              std::fprintf(stderr, "rank %d: %s %s %s count %llu %s failed: %s\n", rank, to_string(kind),
                           to_string(a.type), to_string(a.op), (unsigned long long)count,
                           in_place ? "in place" : "out of place", xcclGetLastError());
              return 1;
            }
            if (!want.empty() && std::memcmp(dst, want.data(), want.size()) != 0) {
              std::fprintf(stderr, "rank %d: %s %s %s count %llu %s: wrong result\n", rank, to_string(kind),
                           to_string(a.type), to_string(a.op), (unsigned long long)count, in_place ? "in place" : "out of place");
              return 2;
            }
          }
  }
  return 0;
}

struct World {
  const char* name;
  int ranks;
  const char* rails;  // nullptr: shared memory; else TCP over these rails
  bool registered = false;  // buffers from xcclMemAlloc (read in place over shared memory)
  const char* fifo_bytes = nullptr;  // XCCL_SHM_FIFO_BYTES: small ones make every frame kind wrap
  const char* all_reduce = nullptr;  // XCCL_ALGO for all-reduce; then only all-reduce runs
  bool no_cma = false;               // XCCL_SHM_CMA=0: large plain sends through the FIFOs too
};

class EveryCollective : public ::testing::TestWithParam<World> {};

TEST_P(EveryCollective, MatchesTheReferenceExactly) {
  const World w = GetParam();
  auto results = test::run_ranks(
      w.ranks,
      [&](xcclComm_t comm, int rank) {
        // Up to several MiB (the largest count is 4 MiB of floats, 8 MiB of doubles) on shared
        // memory; TCP on loopback is slower, so its largest is about 1 MiB of floats.
        // (Under the sanitizers, whose memory checks make every byte ~10× dearer, the
        // counts above 65,537 — still many chunks and FIFO wraps — are left to the default build;
        // so are they with a small FIFO, which 65,537 already wraps 16 times and more, and
        // where the sweep took 27 s with them against 9 s with the default FIFO.)
        std::vector<uint64_t> counts{0, 1, 7, 1001, 65537};
        if (!kSanitized && !w.fifo_bytes) counts.push_back(w.rails ? 262147u : (1u << 20) + 3);
        return sweep(comm, rank, w.ranks, counts, w.registered, w.all_reduce != nullptr);
      },
      std::chrono::seconds(240),
      [&](int) {
        if (w.fifo_bytes) setenv("XCCL_SHM_FIFO_BYTES", w.fifo_bytes, 1);
        if (w.no_cma) setenv("XCCL_SHM_CMA", "0", 1);
        if (w.all_reduce) setenv("XCCL_ALGO", (std::string("all_reduce:") + w.all_reduce).c_str(), 1);
        if (!w.rails) return;
        setenv("XCCL_SHM_DISABLE", "1", 1);
        setenv("XCCL_RAILS", w.rails, 1);
      });
  ASSERT_EQ(results.size(), size_t(w.ranks));
  for (int r = 0; r < w.ranks; ++r) EXPECT_EQ(results[r].exit_code, 0) << "rank " << r;
}

INSTANTIATE_TEST_SUITE_P(Processes, EveryCollective,
                         ::testing::Values(World{"shm", 2, nullptr}, World{"shm", 3, nullptr}, World{"shm", 4, nullptr},
                                           World{"shm_16KiB_fifo", 3, nullptr, false, "16384"},
                                           World{"shm_no_cma", 3, nullptr, false, nullptr, nullptr, true},
                                           World{"shm_registered", 2, nullptr, true},
                                           World{"shm_registered", 3, nullptr, true},
                                           // The tuner takes two-shot for mid sizes; forced, every size runs it,
                                           // and the relay ring the sizes two-shot took from it.
                                           World{"shm_two_shot", 3, nullptr, false, nullptr, "two-shot"},
                                           World{"shm_two_shot_registered", 4, nullptr, true, nullptr, "two-shot"},
                                           World{"shm_ring_relay", 4, nullptr, false, nullptr, "ring-relay"},
                                           World{"tcp", 2, "127.0.0.1"}, World{"tcp2rails", 3, "127.0.0.1,127.0.0.2"},
                                           World{"tcp2rails", 4, "127.0.0.1@200,127.0.0.2@100"},
                                           World{"tcp_registered", 2, "127.0.0.1", true}),
                         [](const auto& info) { return std::string(info.param.name) + "_" + std::to_string(info.param.ranks) + "ranks"; });

TEST(XcclProcesses, AsyncRequestsOverlapAndComplete) {
  auto results = test::run_ranks(2, [](xcclComm_t comm, int rank) {
    std::vector<float> a(1 << 16, float(rank + 1)), b(1 << 16, 0.0f), c(256, float(rank)), d(256 * 2, -1.0f);
    xcclRequest_t r1 = nullptr, r2 = nullptr;
    if (xcclAllReduceAsync(a.data(), b.data(), a.size(), xcclFloat, xcclSum, comm, &r1) != xcclSuccess) return 1;
    if (xcclAllGatherAsync(c.data(), d.data(), c.size(), xcclFloat, comm, &r2) != xcclSuccess) return 2;
    while (xcclTest(r2) == xcclInProgress) {}  // operations finish in order: r1 is done too
    if (xcclWait(r1) != xcclSuccess) return 3;
    if (b[0] != 3.0f || b.back() != 3.0f || d[0] != 0.0f || d[256] != 1.0f) return 4;
    return 0;
  });
  for (auto& r : results) EXPECT_EQ(r.exit_code, 0);
}

TEST(XcclProcesses, GroupedSendRecvExchange) {
  auto results = test::run_ranks(3, [](xcclComm_t comm, int rank) {
    const int n = 3, peer_to = (rank + 1) % n, peer_from = (rank + n - 1) % n;
    std::vector<int32_t> out(100003, rank), in(100003, -1);
    xcclGroupStart();
    xcclSend(out.data(), out.size(), xcclInt32, peer_to, comm);
    xcclRecv(in.data(), in.size(), xcclInt32, peer_from, comm);
    if (xcclGroupEnd() != xcclSuccess) return 1;
    for (int32_t v : in)
      if (v != peer_from) return 2;
    return 0;
  });
  for (auto& r : results) EXPECT_EQ(r.exit_code, 0);
}

// Uneven all-to-all: rank s sends rank d (s + 1) * (d + 2) - 2 elements (rank 0 sends
// rank 0 nothing), blocks packed in destination order, every value naming its source,
// destination and index; blocking, then the same through the Async form.
TEST(XcclProcesses, AllToAllvMovesUnevenBlocks) {
  for (int n : {2, 3, 4}) {
    auto results = test::run_ranks(n, [n](xcclComm_t comm, int me) {
      auto count = [](int s, int d) { return size_t((s + 1) * (d + 2) - 2) * 1000; };
      auto value = [](int s, int d, size_t i) { return int64_t(s) << 40 | int64_t(d) << 32 | int64_t(i); };
      std::vector<size_t> sc(n), sd(n), rc(n), rd(n);
      size_t sent = 0, received = 0;
      for (int p = 0; p < n; ++p) {
        sc[p] = count(me, p), sd[p] = sent, sent += sc[p];
        rc[p] = count(p, me), rd[p] = received, received += rc[p];
      }
      std::vector<int64_t> in(sent), out(received, -1);
      for (int p = 0; p < n; ++p)
        for (size_t i = 0; i < sc[p]; ++i) in[sd[p] + i] = value(me, p, i);
      for (int round = 0; round < 2; ++round) {
        std::fill(out.begin(), out.end(), -1);
        if (round == 0) {
          if (xcclAllToAllv(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), xcclInt64, comm) != xcclSuccess)
            return 1;
        } else {
          xcclRequest_t q = nullptr;
          if (xcclAllToAllvAsync(in.data(), sc.data(), sd.data(), out.data(), rc.data(), rd.data(), xcclInt64, comm, &q) !=
                  xcclSuccess ||
              xcclWait(q) != xcclSuccess)
            return 2;
        }
        for (int p = 0; p < n; ++p)
          for (size_t i = 0; i < rc[p]; ++i)
            if (out[rd[p] + i] != value(p, me, i)) return 3;
      }
      return 0;
    });
    for (auto& r : results) EXPECT_EQ(r.exit_code, 0) << n << " ranks";
  }
}

// A group of collectives and point-to-point calls: the collectives run in call order,
// then the sends and receives (called here before the collectives), as one request.
TEST(XcclProcesses, CollectivesInsideAGroupRunInCallOrder) {
  auto results = test::run_ranks(3, [](xcclComm_t comm, int rank) {
    const int n = 3, to = (rank + 1) % n, from = (rank + n - 1) % n;
    for (bool async : {false, true}) {
      std::vector<float> a(100000, float(rank + 1)), sum(a.size(), 0.0f);
      std::vector<int32_t> mine(7, rank), all(7 * n, -1), out(5000, rank * 10), in(5000, -1);
      xcclGroupStart();
      if (xcclRecv(in.data(), in.size(), xcclInt32, from, comm) != xcclSuccess) return 1;
      if (xcclAllReduce(a.data(), sum.data(), a.size(), xcclFloat, xcclSum, comm) != xcclSuccess) return 2;
      if (xcclSend(out.data(), out.size(), xcclInt32, to, comm) != xcclSuccess) return 3;
      if (xcclAllGather(mine.data(), all.data(), mine.size(), xcclInt32, comm) != xcclSuccess) return 4;
      // Nothing has run yet: the group is queued.
      if (sum[0] != 0.0f || all[0] != -1 || in[0] != -1) return 5;
      if (async) {
        xcclRequest_t q = nullptr;
        if (xcclGroupEndAsync(&q) != xcclSuccess || !q || xcclWait(q) != xcclSuccess) return 6;
      } else if (xcclGroupEnd() != xcclSuccess) {
        return 7;
      }
      if (sum[0] != 6.0f || sum.back() != 6.0f) return 8;
      for (int i = 0; i < 7 * n; ++i)
        if (all[i] != i / 7) return 9;
      for (int32_t v : in)
        if (v != from * 10) return 10;
    }
    return 0;
  });
  for (auto& r : results) EXPECT_EQ(r.exit_code, 0);
}

// Four ranks split by parity, numbered by descending key, and one rank left out: each
// part is a working communicator of its own, its ranks in key order.
TEST(XcclProcesses, SplitMakesCommunicatorsByColorInKeyOrder) {
  auto results = test::run_ranks(5, [](xcclComm_t comm, int rank) {
    const int color = rank == 4 ? XCCL_SPLIT_NOCOLOR : rank % 2;
    xcclComm_t part = nullptr;
    if (xcclCommSplit(comm, color, -rank, &part) != xcclSuccess) {
      std::fprintf(stderr, "rank %d: %s\n", rank, xcclGetLastError());
      return 1;
    }
    if (color == XCCL_SPLIT_NOCOLOR) return part == nullptr ? 0 : 2;
    int size = 0, me = -1;
    xcclCommCount(part, &size);
    xcclCommUserRank(part, &me);
    if (size != 2 || me != (rank < 2 ? 1 : 0)) return 3;  // keys -0,-2 and -1,-3: the higher rank first
    int64_t v = rank, sum = 0;
    std::vector<int32_t> who(2, -1);
    int32_t mine = rank;
    if (xcclAllReduce(&v, &sum, 1, xcclInt64, xcclSum, part) != xcclSuccess) return 4;
    if (xcclAllGather(&mine, who.data(), 1, xcclInt32, part) != xcclSuccess) return 5;
    if (sum != (color == 0 ? 2 : 4) || who[0] != color + 2 || who[1] != color) return 6;
    if (xcclCommDestroy(part) != xcclSuccess) return 7;
    return 0;
  });
  for (auto& r : results) EXPECT_EQ(r.exit_code, 0);
}

// This process's sockets: the bootstrap connection, the rail listeners, the spare bootstrap
// listener (for a shrink), the data connections.
int open_sockets() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    std::string target = std::filesystem::read_symlink(e.path(), ec).string();
    n += target.rfind("socket:", 0) == 0;
  }
  return n;
}

// Over TCP a rank connects to a peer when a step first needs it: after a ring all-reduce
// only to its two neighbours, after an all-to-all to everyone. XCCL_RUNTIME_CONNECT=0
// connects every peer at init.
TEST(XcclProcesses, TcpPeersAreConnectedWhenFirstNeeded) {
  constexpr int kRanks = 6;
  static int inherited = 0;  // sockets a rank had before it joined (each rank's own copy)
  for (const char* runtime : {"1", "0"}) {
    auto results = test::run_ranks(
        kRanks,
        [&](xcclComm_t comm, int rank) {
          const int fixed = inherited + 3;  // and the bootstrap connection, the rail's listener, the spare one
          int at_init = open_sockets();
          std::vector<float> x(100000, float(rank + 1)), y(x.size());
          if (xcclAllReduce(x.data(), y.data(), x.size(), xcclFloat, xcclSum, comm) != xcclSuccess) return 1;
          if (y[0] != kRanks * (kRanks + 1) / 2) return 2;
          int after_ring = open_sockets();
          // A second ring: no rank finishes it before every rank has counted, so no peer
          // that ran ahead dials this one for the all-to-all while it counts.
          if (xcclAllReduce(x.data(), y.data(), x.size(), xcclFloat, xcclSum, comm) != xcclSuccess) return 1;
          std::vector<float> out(kRanks * 1000, float(rank)), in(out.size());
          if (xcclAllToAll(out.data(), in.data(), 1000, xcclFloat, comm) != xcclSuccess) return 3;
          for (int p = 0; p < kRanks; ++p)
            if (in[p * 1000] != float(p)) return 4;
          int after_all = open_sockets();
          std::fprintf(stderr, "rank %d (XCCL_RUNTIME_CONNECT=%s): sockets at init %d, after a ring %d, after all-to-all %d\n",
                       rank, runtime, at_init, after_ring, after_all);
          // Once every peer is connected the rail's listener closes: one socket fewer.
          if (after_all != fixed - 1 + kRanks - 1) return 5;
          if (runtime[0] == '0') return at_init == fixed - 1 + kRanks - 1 ? 0 : 6;
          return after_ring <= fixed + 2 ? 0 : 7;
        },
        std::chrono::seconds(120),
        [&](int) {
          setenv("XCCL_SHM_DISABLE", "1", 1);
          setenv("XCCL_RAILS", "127.0.0.1", 1);
          setenv("XCCL_ALGO", "all_reduce:ring", 1);
          setenv("XCCL_RUNTIME_CONNECT", runtime, 1);
          inherited = open_sockets();
        });
    ASSERT_EQ(results.size(), size_t(kRanks));
    for (int r = 0; r < kRanks; ++r) EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << ", XCCL_RUNTIME_CONNECT=" << runtime;
  }
}

}  // namespace
}  // namespace xm::ccl
