// The reduction kernels built for AVX2 + F16C (this file alone gets -mavx2 -mf16c -O3):
// the loops vectorise 8 floats wide, fp16 converts with vcvtph2ps / vcvtps2ph, and the
// 16-bit floats reduce in one pass (reduce16).
#include <immintrin.h>

#include "ccl/reduce_kernels.h"

namespace xm::ccl::kernels {
namespace {

// 8 at a time; a short tail goes through a padded block so it uses the same instruction.
void half_widen(const uint16_t* in, float* out, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  if (i == n) return;
  alignas(32) uint16_t h[8] = {};
  alignas(32) float f[8];
  __builtin_memcpy(h, in + i, (n - i) * 2);
  _mm256_store_ps(f, _mm256_cvtph_ps(_mm_load_si128(reinterpret_cast<const __m128i*>(h))));
  __builtin_memcpy(out + i, f, (n - i) * 4);
}

void half_narrow(const float* in, uint16_t* out, size_t n) {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(in + i), kRound));
  if (i == n) return;
  alignas(32) float f[8] = {};
  alignas(32) uint16_t h[8];
  __builtin_memcpy(f, in + i, (n - i) * 4);
  _mm_store_si128(reinterpret_cast<__m128i*>(h), _mm256_cvtps_ph(_mm256_load_ps(f), kRound));
  __builtin_memcpy(out + i, h, (n - i) * 2);
}

// bf16 <-> fp32, 8 at a time: the top half of an fp32; narrowing rounds to nearest even
// and keeps NaNs NaN (quiet), as bf16_narrow does one by one.
__m256 bf16_widen8(__m128i h) { return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)); }
__m128i bf16_narrow8(__m256 f) {
  const __m256i x = _mm256_castps_si256(f);
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)), _mm256_set1_epi32(0x7f800000));
  const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
  const __m256i r = _mm256_blendv_epi8(rounded, quiet, nan);  // every lane <= 0xffff: packs exactly
  return _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
}
__m256 half_widen8(__m128i h) { return _mm256_cvtph_ps(h); }
__m128i half_narrow8(__m256 f) { return _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }

// The ops as reduce_native applies them to floats (min: y < x ? y : x, which is MINPS
// with the operands swapped; max likewise), so the result is the same bit for bit.
struct Add { __m256 operator()(__m256 x, __m256 y) const { return _mm256_add_ps(x, y); } };
struct Mul { __m256 operator()(__m256 x, __m256 y) const { return _mm256_mul_ps(x, y); } };
struct Min { __m256 operator()(__m256 x, __m256 y) const { return _mm256_min_ps(y, x); } };
struct Max { __m256 operator()(__m256 x, __m256 y) const { return _mm256_max_ps(y, x); } };

// 16-bit floats in one pass: widen 8 of each operand, combine, narrow, store. (Widening
// whole blocks into fp32 scratch first, as the portable kernel does, ran at a third of
// fp32's speed here; this runs at about fp32's in elements per second.) Returns how many
// elements it did: the rest (n mod 8) are the caller's.
template <typename Op>
size_t reduce16(uint16_t* d, const uint16_t* x, const uint16_t* y, size_t n, bool bf16, Op op) {
  size_t i = 0;
  auto load = [](const uint16_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); };
  if (bf16)
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), bf16_narrow8(op(bf16_widen8(load(x + i)), bf16_widen8(load(y + i)))));
  else
    for (; i + 8 <= n; i += 8)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(d + i), half_narrow8(op(half_widen8(load(x + i)), half_widen8(load(y + i)))));
  return i;
}

}  // namespace

void reduce_avx2(void* dst, const void* a, const void* b, size_t n, DataType type, RedOp op) {
  if (type != DataType::kFloat16 && type != DataType::kBfloat16) return reduce_any(dst, a, b, n, type, op, half_widen, half_narrow);
  auto* d = static_cast<uint16_t*>(dst);
  auto *x = static_cast<const uint16_t*>(a), *y = static_cast<const uint16_t*>(b);
  const bool bf16 = type == DataType::kBfloat16;
  size_t done = 0;
  switch (op) {
    case RedOp::kSum: case RedOp::kAvg: done = reduce16(d, x, y, n, bf16, Add{}); break;
    case RedOp::kProd: done = reduce16(d, x, y, n, bf16, Mul{}); break;
    case RedOp::kMin: done = reduce16(d, x, y, n, bf16, Min{}); break;
    case RedOp::kMax: done = reduce16(d, x, y, n, bf16, Max{}); break;
  }
  reduce_any(d + done, x + done, y + done, n - done, type, op, half_widen, half_narrow);  // the last n mod 8
}

void finalize_avg_avx2(void* data, size_t n, DataType type, int nranks) {
  finalize_any(data, n, type, nranks, half_widen, half_narrow);
}

}  // namespace xm::ccl::kernels
