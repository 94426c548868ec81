#include "ccl/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace xm::ccl {
namespace {

TEST(Half, EveryHalfSurvivesARoundTrip) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = half_to_float(uint16_t(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_half(f), h) << std::hex << h;
  }
}

// An independent reference: the nearest finite half by search, ties to even, overflow
// to infinity at 65520 (the midpoint above the largest half).
uint16_t nearest_half(float f) {
  static const std::vector<float> halves = [] {
    std::vector<float> v;
    for (uint32_t h = 0; h < 0x7c00; ++h) v.push_back(half_to_float(uint16_t(h)));  // +0 .. 65504, ascending
    return v;
  }();
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  float a = std::fabs(f);
  if (a >= 65520.0f) return sign | 0x7c00;
  auto hi = std::lower_bound(halves.begin(), halves.end(), a);
  if (hi == halves.begin()) return sign;
  if (hi == halves.end()) return sign | 0x7bff;
  auto lo = hi - 1;
  double dlo = double(a) - *lo, dhi = double(*hi) - a;
  uint16_t l = uint16_t(lo - halves.begin()), h = uint16_t(hi - halves.begin());
  if (dlo < dhi) return sign | l;
  if (dhi < dlo) return sign | h;
  return sign | ((l & 1) ? h : l);
}

TEST(Half, ConversionRoundsToNearestEven) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  std::uniform_real_distribution<float> small(-70000.0f, 70000.0f);
  for (int i = 0; i < 400'000; ++i) {
    float f = i % 2 ? small(rng) : std::bit_cast<float>(bits(rng));
    if (std::isnan(f) || std::isinf(f)) continue;
    ASSERT_EQ(float_to_half(f), nearest_half(f)) << f;
#if defined(__FLT16_MAX__)  // the compiler's own conversion, where it has one
    ASSERT_EQ(float_to_half(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
#endif
  }
}

TEST(Bfloat16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(NAN))));
  for (uint32_t b = 0; b < 0x10000; ++b) {
    float f = bf16_to_float(uint16_t(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), b);
  }
}

template <typename T>
std::vector<T> run(std::vector<T> a, const std::vector<T>& b, DataType type, RedOp op) {
  reduce(a.data(), a.data(), b.data(), a.size(), type, op);
  return a;
}

TEST(Reduce, IntegersWrapAndCompare) {
  std::vector<int8_t> a{100, -100, 5, -7}, b{100, -100, -9, 3};
  EXPECT_EQ(run(a, b, DataType::kInt8, RedOp::kSum), (std::vector<int8_t>{-56, 56, -4, -4}));
  EXPECT_EQ(run(a, b, DataType::kInt8, RedOp::kMin), (std::vector<int8_t>{100, -100, -9, -7}));
  EXPECT_EQ(run(a, b, DataType::kInt8, RedOp::kMax), (std::vector<int8_t>{100, -100, 5, 3}));
  std::vector<uint8_t> u{200, 3}, v{100, 250};
  EXPECT_EQ(run(u, v, DataType::kUint8, RedOp::kSum), (std::vector<uint8_t>{44, 253}));
  EXPECT_EQ(run(u, v, DataType::kUint8, RedOp::kMin), (std::vector<uint8_t>{100, 3}));
  std::vector<int64_t> x{INT64_MAX, 6}, y{1, 7};
  EXPECT_EQ(run(x, y, DataType::kInt64, RedOp::kSum), (std::vector<int64_t>{INT64_MIN, 13}));
  EXPECT_EQ(run(x, y, DataType::kInt64, RedOp::kProd)[1], 42);
}

TEST(Reduce, HalfSumsInFloatAndRoundsOnce) {
  std::vector<uint16_t> a{float_to_half(1.5f), float_to_half(2048.0f)}, b{float_to_half(2.25f), float_to_half(1.0f)};
  std::vector<uint16_t> r = run(a, b, DataType::kFloat16, RedOp::kSum);
  EXPECT_EQ(half_to_float(r[0]), 3.75f);
  EXPECT_EQ(half_to_float(r[1]), 2048.0f);  // 2049 is not a half: ties to even
}

TEST(Reduce, AvgDividesOnFinalize) {
  std::vector<int32_t> i{7, -7};
  finalize_avg(i.data(), 2, DataType::kInt32, 2);
  EXPECT_EQ(i, (std::vector<int32_t>{3, -3}));
  std::vector<double> d{1.0};
  finalize_avg(d.data(), 1, DataType::kFloat64, 3);
  EXPECT_EQ(d[0], 1.0 / 3);
  std::vector<uint16_t> b{float_to_bf16(6.0f)};
  finalize_avg(b.data(), 1, DataType::kBfloat16, 4);
  EXPECT_EQ(bf16_to_float(b[0]), 1.5f);
}

TEST(Reduce, LongBuffersAcrossTheWideningBlock) {
  const size_t n = 1000;
  std::vector<uint16_t> a(n), b(n);
  for (size_t i = 0; i < n; ++i) a[i] = float_to_bf16(float(i % 50)), b[i] = float_to_bf16(float(i % 7));
  std::vector<uint16_t> r = run(a, b, DataType::kBfloat16, RedOp::kMax);
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(bf16_to_float(r[i]), float(std::max(i % 50, i % 7))) << i;
}

// The 16-bit floats against a scalar reference (widen, apply the op in fp32, round once),
// over random bit patterns — NaNs, infinities, subnormals and signed zeros among them —
// every op, lengths that leave every tail, and operands at every alignment.
TEST(Reduce, SixteenBitFloatsMatchTheScalarReference) {
  std::mt19937 rng(29);
  for (DataType type : {DataType::kFloat16, DataType::kBfloat16}) {
    const bool bf16 = type == DataType::kBfloat16;
    auto widen = [&](uint16_t h) { return bf16 ? bf16_to_float(h) : half_to_float(h); };
    auto narrow = [&](float f) { return bf16 ? float_to_bf16(f) : float_to_half(f); };
    for (RedOp op : {RedOp::kSum, RedOp::kProd, RedOp::kMin, RedOp::kMax, RedOp::kAvg})
      for (size_t n : {size_t(0), size_t(1), size_t(7), size_t(8), size_t(9), size_t(63), size_t(1001)})
        for (size_t shift : {size_t(0), size_t(1), size_t(3)}) {
          std::vector<uint16_t> a(n + shift), b(n + shift), d(n + shift, 0xdead);
          for (size_t i = 0; i < n + shift; ++i) a[i] = uint16_t(rng()), b[i] = uint16_t(rng());
          if (n > 2) a[shift] = narrow(1.0f), b[shift] = narrow(2.0f);  // some ordinary values too
          reduce(d.data() + shift, a.data() + shift, b.data(), n, type, op);
          for (size_t i = 0; i < n; ++i) {
            float x = widen(a[shift + i]), y = widen(b[i]);
            float r = op == RedOp::kSum || op == RedOp::kAvg ? x + y : op == RedOp::kProd ? x * y
                    : op == RedOp::kMin ? (y < x ? y : x) : (x < y ? y : x);
            float got = widen(d[shift + i]);
            if (std::isnan(r)) ASSERT_TRUE(std::isnan(got)) << to_string(type) << " " << to_string(op) << " " << i;
            else ASSERT_EQ(d[shift + i], narrow(r)) << to_string(type) << " " << to_string(op) << " n " << n << " at " << i
                                                     << ": " << x << ", " << y;
          }
        }
  }
}

}  // namespace
}  // namespace xm::ccl
