// Every collective × type × op × rank count × size, ranks as threads over in-memory
// FIFOs: the schedules and the executor, checked exactly against the reference.
#include <gtest/gtest.h>

#include <memory>
#include <thread>

#include "ccl/executor.h"
#include "ccl/check.h"

namespace xm::ccl {
namespace {

// n ranks' links over heap FIFOs; small FIFOs so wrap-around and back-pressure happen.
class ThreadWorld {
 public:
  ThreadWorld(int n, size_t fifo_bytes) : memory_(size_t(n) * n), links_(size_t(n) * n) {
    for (auto& m : memory_) m = std::make_unique<std::byte[]>(kFifoHeader + fifo_bytes);
    std::vector<ByteFifo> fifos;
    for (int i = 0; i < n * n; ++i) fifos.emplace_back(memory_[i].get(), fifo_bytes, true);
    for (int r = 0; r < n; ++r)
      for (int p = 0; p < n; ++p)
        if (p != r) links_[r * n + p] = std::make_unique<FifoLink>(fifos[r * n + p], fifos[p * n + r]);
    for (int r = 0; r < n; ++r) {
      std::vector<Link*> row;
      for (int p = 0; p < n; ++p) row.push_back(links_[r * n + p].get());
      rows_.push_back(row);
    }
  }
  std::span<Link* const> links(int rank) const { return rows_[rank]; }

 private:
  std::vector<std::unique_ptr<std::byte[]>> memory_;
  std::vector<std::unique_ptr<Link>> links_;
  std::vector<std::vector<Link*>> rows_;
};

// Runs `a` on every rank; returns the first failure's message, or "".
std::string run_and_check(CollectiveArgs a, size_t fifo_bytes) {
  ThreadWorld world(a.ranks, fifo_bytes);
  std::vector<std::string> errors(a.ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < a.ranks; ++r)
    threads.emplace_back([&, r] {
      CollectiveArgs mine = a;
      mine.rank = r;
      std::vector<std::byte> in = check::make_input(mine, r);
      std::vector<std::byte> expected = check::expected_output(mine, r);
      std::vector<std::byte> out(output_count(mine) * size_of(a.type));
      Schedule s = make_schedule(mine);
      std::vector<std::byte> scratch(s.scratch_elements * size_of(a.type));
      ExecBuffers b{in.data(), out.data(), scratch.data(), {}};
      if (a.in_place) {  // NCCL's in-place layouts
        if (a.collective == Collective::kAllGather) {
          if (!in.empty()) std::memcpy(out.data() + r * in.size(), in.data(), in.size());
          b.input = out.data() + r * in.size();
        } else if (a.collective == Collective::kReduceScatter) {
          out = in;
          b.output = out.data() + r * a.count * size_of(a.type);
          b.input = out.data();
        } else {
          out = in;
          b.input = out.data();
        }
      }
      Status st = execute(s, mine, b, world.links(r), {std::chrono::milliseconds(20000)});
      if (!st) return void(errors[r] = "rank " + std::to_string(r) + ": " + st.message());
      const std::byte* got = b.output;
      if (!expected.empty() && std::memcmp(got, expected.data(), expected.size()) != 0) {
        size_t es = size_of(a.type);
        for (size_t i = 0; i < expected.size() / es; ++i)
          if (std::memcmp(got + i * es, expected.data() + i * es, es) != 0)
            return void(errors[r] = "rank " + std::to_string(r) + ": element " + std::to_string(i) + " differs (" +
                                    std::to_string(int(got[i * es])) + " vs " + std::to_string(int(expected[i * es])) + ")");
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (!e.empty()) return e;
  return "";
}

// Large counts run for one type of each element size (a schedule slices by bytes, so
// the element size is what can misalign it) with sum, and fp32 with avg; every type and
// op runs at the small counts, and the reduction kernels have their own tests.
bool representative(DataType t, RedOp o, bool reducing) {
  bool sizes = t == DataType::kInt8 || t == DataType::kBfloat16 || t == DataType::kFloat32 || t == DataType::kFloat64;
  return sizes && (!reducing || o == RedOp::kSum || (t == DataType::kFloat32 && o == RedOp::kAvg));
}

// Under the sanitizers, which check how the ranks touch memory and synchronise, not
// what they compute: the representative types at every count; under ThreadSanitizer fp32
// sum alone at the large ones. The default build runs every type and op (under TSan all
// of them took 1,330 test-seconds, 11 of its stage's 14 minutes; under ASan 380).
#ifdef XM_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#ifdef XM_THREAD_SANITIZED
constexpr bool kThreadSanitized = true;
#else
constexpr bool kThreadSanitized = false;
#endif

bool runs(DataType t, RedOp o, bool reducing, uint64_t count) {
  if (kThreadSanitized && count > 10000) return t == DataType::kFloat32 && (!reducing || o == RedOp::kSum);
  if (kSanitized || count > 10000) return representative(t, o, reducing);
  return true;
}

struct Case {
  Collective collective;
  int ranks;
  uint64_t count;
  bool in_place;
  bool relays = false;  // all-reduce: the relay ring (over these links: receive, then send on)
};

class Collectives : public ::testing::TestWithParam<Case> {};

TEST_P(Collectives, EveryTypeAndOpExact) {
  const Case& c = GetParam();
  bool reducing = c.collective == Collective::kAllReduce || c.collective == Collective::kReduce ||
                  c.collective == Collective::kReduceScatter;
  for (int t = 0; t < kDataTypes; ++t)
    for (int o = 0; o < (reducing ? kRedOps : 1); ++o) {
      if (!runs(DataType(t), RedOp(o), reducing, c.count)) continue;
      CollectiveArgs a;
      a.collective = c.collective;
      a.ranks = c.ranks;
      a.count = c.count;
      a.type = DataType(t);
      a.op = RedOp(o);
      a.in_place = c.in_place;
      a.relays = c.relays;
      a.root = c.ranks - 1;
      a.chunk_bytes = 4096;  // many slices even for small buffers
      std::string err = run_and_check(a, 8192);
      ASSERT_EQ(err, "") << to_string(a.collective) << " " << to_string(a.type) << " " << to_string(a.op);
    }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int c = 0; c < 6; ++c)
    for (int ranks : {1, 2, 3, 4, 5})
      for (uint64_t count : {0ull, 1ull, 7ull, 1001ull, 65537ull})
        for (bool in_place : {false, true}) {
          out.push_back({Collective(c), ranks, count, in_place});
          if (Collective(c) == Collective::kAllReduce && ranks != 4 && ranks != 1)
            out.push_back({Collective(c), ranks, count, in_place, true});
        }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Threads, Collectives, ::testing::ValuesIn(cases()), [](const auto& info) {
  const Case& c = info.param;
  return std::string(to_string(c.collective)) + "_" + std::to_string(c.ranks) + "ranks_" +
         std::to_string(c.count) + (c.in_place ? "_inplace" : "_outofplace") + (c.relays ? "_relays" : "");
});

// The topology-aware and latency-bound algorithms, over layouts of hosts × local ranks.
struct AlgorithmCase {
  Collective collective;
  Algorithm algorithm;
  int hosts, local;
  uint64_t count;
  bool in_place;
};

class Algorithms : public ::testing::TestWithParam<AlgorithmCase> {};

TEST_P(Algorithms, EveryTypeAndOpExact) {
  const AlgorithmCase& c = GetParam();
  RankLayout layout = RankLayout::grid(c.hosts, c.local);
  bool reducing = c.collective == Collective::kAllReduce || c.collective == Collective::kReduceScatter;
  for (int t = 0; t < kDataTypes; ++t)
    for (int o = 0; o < (reducing ? kRedOps : 1); ++o) {
      if (!runs(DataType(t), RedOp(o), reducing, c.count)) continue;
      CollectiveArgs a;
      a.collective = c.collective;
      a.algorithm = c.algorithm;
      a.layout = &layout;
      a.ranks = c.hosts * c.local;
      a.count = c.count;
      a.type = DataType(t);
      a.op = RedOp(o);
      a.in_place = c.in_place;
      // Direct all-gather stages slices of the descriptor size or more: 16 KiB slices
      // stage the large counts of 4- and 8-byte types (and wrap the slot window), not
      // the rest.
      a.chunk_bytes = c.algorithm == Algorithm::kDirect ? 16384 : 4096;
      a.shared_memory = c.hosts == 1;  // two-shot and direct apply
      std::string err = run_and_check(a, 8192);
      ASSERT_EQ(err, "") << to_string(a.algorithm) << " " << to_string(a.type) << " " << to_string(a.op);
      Schedule s = make_schedule(a);  // the algorithm asked for, not a fallback
      bool applies = c.algorithm == Algorithm::kRecursiveDoubling || c.algorithm == Algorithm::kTree ||
                     (c.hosts > 1 && c.local > 1) ||
                     ((c.algorithm == Algorithm::kTwoShot || c.algorithm == Algorithm::kDirect) && a.ranks > 1);
      if (applies) {
        EXPECT_EQ(s.algorithm, to_string(c.algorithm));
      }
    }
}

std::vector<AlgorithmCase> algorithm_cases() {
  std::vector<AlgorithmCase> out;
  struct Shape {
    int hosts, local;
  } shapes[] = {{2, 2}, {3, 2}, {2, 3}, {1, 3}, {3, 1}};
  for (Shape sh : shapes)
    for (uint64_t count : {0ull, 1ull, 7ull, 1001ull, 65537ull})
      for (bool in_place : {false, true}) {
        // Degenerate shapes (one host, one rank per host) fall back: a small count will do;
        // the large count once per layout and placement is enough (ThreadSanitizer's time).
        bool degenerate = sh.hosts == 1 || sh.local == 1;
        if (degenerate && count != 7) continue;
        if (count == 65537 && sh.hosts * sh.local == 6 && in_place) continue;
        out.push_back({Collective::kAllReduce, Algorithm::kHierarchical, sh.hosts, sh.local, count, in_place});
        out.push_back({Collective::kAllReduce, Algorithm::kHierarchicalTree, sh.hosts, sh.local, count, in_place});
        out.push_back({Collective::kAllReduce, Algorithm::kTree, sh.hosts, sh.local, count, in_place});
        out.push_back({Collective::kAllToAll, Algorithm::kPxn, sh.hosts, sh.local, count, in_place});
        out.push_back({Collective::kAllGather, Algorithm::kHierarchical, sh.hosts, sh.local, count, in_place});
        out.push_back({Collective::kReduceScatter, Algorithm::kHierarchical, sh.hosts, sh.local, count, in_place});
        if (count <= 1001)
          out.push_back({Collective::kAllReduce, Algorithm::kRecursiveDoubling, sh.hosts, sh.local, count, in_place});
      }
  // Two-shot: one host of 1 to 5 ranks (segments of 0, 1 and many slices; in place the
  // gather overwrites what the staging read).
  for (int ranks : {1, 2, 3, 4, 5})
    for (uint64_t count : {0ull, 1ull, 7ull, 1001ull, 65537ull})
      for (bool in_place : {false, true})
        out.push_back({Collective::kAllReduce, Algorithm::kTwoShot, 1, ranks, count, in_place});
  // Direct all-gather and reduce-scatter: the same ranks and counts, staged and straight
  // from the input.
  for (Collective c : {Collective::kAllGather, Collective::kReduceScatter})
    for (int ranks : {1, 2, 3, 4, 5})
      for (uint64_t count : {0ull, 1ull, 7ull, 1001ull, 65537ull})
        for (bool in_place : {false, true})
          out.push_back({c, Algorithm::kDirect, 1, ranks, count, in_place});
  return out;
}

INSTANTIATE_TEST_SUITE_P(Threads, Algorithms, ::testing::ValuesIn(algorithm_cases()), [](const auto& info) {
  const AlgorithmCase& c = info.param;
  std::string algo = to_string(c.algorithm);
  for (char& ch : algo)
    if (ch == '-') ch = '_';
  return std::string(to_string(c.collective)) + "_" + algo + "_" + std::to_string(c.hosts) + "x" +
         std::to_string(c.local) + "_" + std::to_string(c.count) + (c.in_place ? "_inplace" : "_outofplace");
});

}  // namespace
}  // namespace xm::ccl
