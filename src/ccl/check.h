// Inputs and expected outputs of collectives, computed the slow, obvious way: used by
// the tests and by xccl-perf -c 1.
//
// Inputs are small integers so every reduction is exact in every type (as nccl-tests
// chooses them): values in 1..4 for sums, 1..2 for products; avg is computed the way
// the runtime rounds it (sum exactly, then one division in the type's arithmetic).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ccl/reduce.h"
#include "ccl/schedules.h"

namespace xm::ccl::check {

inline double input_value(int rank, uint64_t i, RedOp op) {
  return op == RedOp::kProd ? double(1 + (rank + i) % 2) : double(1 + (rank * 7 + i * 3) % 4);
}

// Stores v (an exactly representable value) as `type` at element i of `out`.
inline void store(std::byte* out, uint64_t i, DataType type, double v) {
  std::byte* p = out + i * size_of(type);
  auto put = [&](auto x) { std::memcpy(p, &x, sizeof x); };
  switch (type) {
    case DataType::kInt8: return put(int8_t(v));
    case DataType::kUint8: return put(uint8_t(v));
    case DataType::kInt32: return put(int32_t(v));
    case DataType::kInt64: return put(int64_t(v));
    case DataType::kFloat16: return put(float_to_half(float(v)));
    case DataType::kBfloat16: return put(float_to_bf16(float(v)));
    case DataType::kFloat32: return put(float(v));
    case DataType::kFloat64: return put(double(v));
  }
}

// The reduction of all ranks' element i, finalized as the runtime does.
inline void store_reduced(std::byte* out, uint64_t at, DataType type, RedOp op, int ranks, uint64_t i) {
  double acc = input_value(0, i, op);
  for (int r = 1; r < ranks; ++r) {
    double v = input_value(r, i, op);
    acc = op == RedOp::kProd ? acc * v : op == RedOp::kMin ? std::min(acc, v) : op == RedOp::kMax ? std::max(acc, v) : acc + v;
  }
  store(out, at, type, acc);
  if (op == RedOp::kAvg) finalize_avg(out + at * size_of(type), 1, type, ranks);
}

// Input buffer of `rank` (count per NCCL's convention: see CollectiveArgs).
inline std::vector<std::byte> make_input(const CollectiveArgs& a, int rank) {
  uint64_t n = a.count;
  if (a.collective == Collective::kReduceScatter || a.collective == Collective::kAllToAll) n *= a.ranks;
  std::vector<std::byte> in(n * size_of(a.type));
  for (uint64_t i = 0; i < n; ++i) {
    // All-to-all: tag each element with sender and position so misrouting shows.
    double v = a.collective == Collective::kAllToAll ? double((rank * 5 + i) % 13) : input_value(rank, i, a.op);
    if (a.collective == Collective::kBroadcast && rank != a.root) v = 0;
    store(in.data(), i, a.type, v);
  }
  return in;
}

// What `rank`'s output must hold. Reduce: only the root's output is defined (others: empty).
inline std::vector<std::byte> expected_output(const CollectiveArgs& a, int rank) {
  const size_t es = size_of(a.type);
  std::vector<std::byte> out(output_count(a) * es);
  switch (a.collective) {
    case Collective::kAllReduce:
      for (uint64_t i = 0; i < a.count; ++i) store_reduced(out.data(), i, a.type, a.op, a.ranks, i);
      break;
    case Collective::kReduce:
      if (rank != a.root) return {};
      for (uint64_t i = 0; i < a.count; ++i) store_reduced(out.data(), i, a.type, a.op, a.ranks, i);
      break;
    case Collective::kReduceScatter:
      for (uint64_t i = 0; i < a.count; ++i)
        store_reduced(out.data(), i, a.type, a.op, a.ranks, uint64_t(rank) * a.count + i);
      break;
    case Collective::kBroadcast:
      for (uint64_t i = 0; i < a.count; ++i) store(out.data(), i, a.type, input_value(a.root, i, a.op));
      break;
    case Collective::kAllGather:
      for (int r = 0; r < a.ranks; ++r)
        for (uint64_t i = 0; i < a.count; ++i) store(out.data(), r * a.count + i, a.type, input_value(r, i, a.op));
      break;
    case Collective::kAllToAll:
      for (int src = 0; src < a.ranks; ++src)
        for (uint64_t i = 0; i < a.count; ++i)
          store(out.data(), src * a.count + i, a.type, double((src * 5 + rank * a.count + i) % 13));
      break;
  }
  return out;
}

}  // namespace xm::ccl::check
