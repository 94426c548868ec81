// The reduction loops, written once and compiled twice: for the baseline x86-64 ISA
// (reduce.cc) and for AVX2 + F16C (reduce_avx2.cc), chosen at run time. Internal.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ccl/schedules.h"

namespace xm::ccl::kernels {

template <typename T, typename F>
inline void apply(void* dst, const void* a, const void* b, size_t n, F f) {
  // dst may alias a or b index for index, which an element-wise loop allows.
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = f(x[i], y[i]);
}

template <typename T>
inline void reduce_native(void* dst, const void* a, const void* b, size_t n, RedOp op) {
  switch (op) {
    case RedOp::kSum: case RedOp::kAvg:
      if constexpr (std::is_integral_v<T>)  // wrap, don't invoke UB on overflow
        return apply<T>(dst, a, b, n, [](T x, T y) {
          using U = std::make_unsigned_t<T>;
          return T(U(x) + U(y));
        });
      else
        return apply<T>(dst, a, b, n, [](T x, T y) { return T(x + y); });
    case RedOp::kProd:
      if constexpr (std::is_integral_v<T>)
        return apply<T>(dst, a, b, n, [](T x, T y) {
          using U = std::make_unsigned_t<T>;
          return T(U(U(x) * U(y)));
        });
      else
        return apply<T>(dst, a, b, n, [](T x, T y) { return T(x * y); });
    case RedOp::kMin: return apply<T>(dst, a, b, n, [](T x, T y) { return y < x ? y : x; });
    case RedOp::kMax: return apply<T>(dst, a, b, n, [](T x, T y) { return x < y ? y : x; });
  }
}

// fp16 / bf16: widen a block to fp32, reduce there, narrow once. Widen/Narrow convert
// whole blocks so an ISA with vector conversions can use them.
template <typename Widen, typename Narrow>
inline void reduce_narrow(void* dst, const void* a, const void* b, size_t n, RedOp op, Widen widen, Narrow narrow) {
  constexpr size_t kBlock = 256;
  alignas(32) float fa[kBlock], fb[kBlock];
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (size_t base = 0; base < n; base += kBlock) {
    size_t m = std::min(kBlock, n - base);
    widen(x + base, fa, m);
    widen(y + base, fb, m);
    reduce_native<float>(fa, fa, fb, m, op);
    narrow(fa, d + base, m);
  }
}

template <typename T>
inline void divide(void* data, size_t n, int nranks) {
  T* d = static_cast<T*>(data);
  if constexpr (std::is_integral_v<T>)  // in 64 bits: T(nranks) would wrap (int8 at 128 ranks)
    for (size_t i = 0; i < n; ++i) d[i] = T(int64_t(d[i]) / nranks);
  else
    for (size_t i = 0; i < n; ++i) d[i] = T(d[i] / T(nranks));
}

template <typename Widen, typename Narrow>
inline void divide_narrow(void* data, size_t n, int nranks, Widen widen, Narrow narrow) {
  constexpr size_t kBlock = 256;
  alignas(32) float f[kBlock];
  uint16_t* d = static_cast<uint16_t*>(data);
  for (size_t base = 0; base < n; base += kBlock) {
    size_t m = std::min(kBlock, n - base);
    widen(d + base, f, m);
    for (size_t i = 0; i < m; ++i) f[i] /= float(nranks);
    narrow(f, d + base, m);
  }
}

// bf16 is the top half of an fp32: plain shifts, which vectorise anywhere.
inline void bf16_widen(const uint16_t* in, float* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t bits = uint32_t(in[i]) << 16;
    __builtin_memcpy(&out[i], &bits, 4);
  }
}
inline void bf16_narrow(const float* in, uint16_t* out, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    uint32_t x;
    __builtin_memcpy(&x, &in[i], 4);
    bool nan = (x & 0x7fffffffu) > 0x7f800000u;
    out[i] = nan ? uint16_t((x >> 16) | 0x40) : uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
  }
}

// Dispatch over every type, given the fp16 block converters of this ISA.
template <typename HalfWiden, typename HalfNarrow>
inline void reduce_any(void* dst, const void* a, const void* b, size_t n, DataType type, RedOp op, HalfWiden hw,
                       HalfNarrow hn) {
  switch (type) {
    case DataType::kInt8: return reduce_native<int8_t>(dst, a, b, n, op);
    case DataType::kUint8: return reduce_native<uint8_t>(dst, a, b, n, op);
    case DataType::kInt32: return reduce_native<int32_t>(dst, a, b, n, op);
    case DataType::kInt64: return reduce_native<int64_t>(dst, a, b, n, op);
    case DataType::kFloat16: return reduce_narrow(dst, a, b, n, op, hw, hn);
    case DataType::kBfloat16: return reduce_narrow(dst, a, b, n, op, bf16_widen, bf16_narrow);
    case DataType::kFloat32: return reduce_native<float>(dst, a, b, n, op);
    case DataType::kFloat64: return reduce_native<double>(dst, a, b, n, op);
  }
}

template <typename HalfWiden, typename HalfNarrow>
inline void finalize_any(void* data, size_t n, DataType type, int nranks, HalfWiden hw, HalfNarrow hn) {
  switch (type) {
    case DataType::kInt8: return divide<int8_t>(data, n, nranks);
    case DataType::kUint8: return divide<uint8_t>(data, n, nranks);
    case DataType::kInt32: return divide<int32_t>(data, n, nranks);
    case DataType::kInt64: return divide<int64_t>(data, n, nranks);
    case DataType::kFloat16: return divide_narrow(data, n, nranks, hw, hn);
    case DataType::kBfloat16: return divide_narrow(data, n, nranks, bf16_widen, bf16_narrow);
    case DataType::kFloat32: return divide<float>(data, n, nranks);
    case DataType::kFloat64: return divide<double>(data, n, nranks);
  }
}

// The AVX2 + F16C build (reduce_avx2.cc); call only where the CPU has both.
void reduce_avx2(void* dst, const void* a, const void* b, size_t n, DataType type, RedOp op);
void finalize_avg_avx2(void* data, size_t n, DataType type, int nranks);

}  // namespace xm::ccl::kernels
