// The reduction kernels built for AVX2 + F16C (this file alone gets -mavx2 -mf16c -O3):
// the loops vectorise 8 floats wide and fp16 converts with vcvtph2ps / vcvtps2ph.
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

}  // namespace

void reduce_avx2(void* dst, const void* a, const void* b, size_t n, DataType type, RedOp op) {
  reduce_any(dst, a, b, n, type, op, half_widen, half_narrow);
}

void finalize_avg_avx2(void* data, size_t n, DataType type, int nranks) {
  finalize_any(data, n, type, nranks, half_widen, half_narrow);
}

}  // namespace xm::ccl::kernels
