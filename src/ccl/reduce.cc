#include "ccl/reduce.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>

namespace xm::ccl {

size_t size_of(DataType type) {
  switch (type) {
    case DataType::kInt8: case DataType::kUint8: return 1;
    case DataType::kFloat16: case DataType::kBfloat16: return 2;
    case DataType::kInt32: case DataType::kFloat32: return 4;
    case DataType::kInt64: case DataType::kFloat64: return 8;
  }
  return 0;
}

const char* to_string(DataType type) {
  static const char* names[] = {"int8", "uint8", "int32", "int64", "half", "bfloat16", "float", "double"};
  return names[int(type)];
}

const char* to_string(RedOp op) {
  static const char* names[] = {"sum", "prod", "min", "max", "avg"};
  return names[int(op)];
}

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (man << 13));  // inf, nan
  if (exp == 0) {                                                                    // zero, subnormal
    float v = std::bit_cast<float>(0x33800000u) * float(man);  // man × 2^-24
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (man << 13));
}

uint16_t float_to_half(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint16_t sign = uint16_t((x >> 16) & 0x8000);
  uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0);  // inf, nan
  if (abs >= 0x477ff000u) return sign | 0x7c00;  // rounds above the largest half: inf
  if (abs < 0x38800000u) {                        // below the smallest normal half: subnormal
    // Scale so the 10-bit subnormal mantissa lands in the low bits, then round to even.
    float scaled = std::bit_cast<float>(abs) * 16777216.0f;  // × 2^24
    uint32_t m = uint32_t(scaled);
    float rest = scaled - float(m);
    if (rest > 0.5f || (rest == 0.5f && (m & 1))) ++m;
    return sign | uint16_t(m);
  }
  uint32_t rounded = abs + 0xfff + ((abs >> 13) & 1);  // round to nearest even at bit 13
  return sign | uint16_t((rounded - 0x38000000u) >> 13);
}

float bf16_to_float(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }

uint16_t float_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return uint16_t((x >> 16) | 0x40);  // quiet nan
  return uint16_t((x + 0x7fff + ((x >> 16) & 1)) >> 16);
}

namespace {

template <typename T, typename F>
void apply(void* dst, const void* a, const void* b, size_t n, F f) {
  // dst may alias a or b index for index, which an element-wise loop allows.
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  for (size_t i = 0; i < n; ++i) d[i] = f(x[i], y[i]);
}

template <typename T>
void reduce_native(void* dst, const void* a, const void* b, size_t n, RedOp op) {
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

// fp16 / bf16: widen a block to fp32, reduce there, narrow once.
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_narrow(void* dst, const void* a, const void* b, size_t n, RedOp op) {
  constexpr size_t kBlock = 256;
  float fa[kBlock], fb[kBlock];
  const uint16_t* x = static_cast<const uint16_t*>(a);
  const uint16_t* y = static_cast<const uint16_t*>(b);
  uint16_t* d = static_cast<uint16_t*>(dst);
  for (size_t base = 0; base < n; base += kBlock) {
    size_t m = std::min(kBlock, n - base);
    for (size_t i = 0; i < m; ++i) fa[i] = Widen(x[base + i]), fb[i] = Widen(y[base + i]);
    reduce_native<float>(fa, fa, fb, m, op);
    for (size_t i = 0; i < m; ++i) d[base + i] = Narrow(fa[i]);
  }
}

template <typename T>
void divide(void* data, size_t n, int nranks) {
  T* d = static_cast<T*>(data);
  for (size_t i = 0; i < n; ++i) d[i] = T(d[i] / T(nranks));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void divide_narrow(void* data, size_t n, int nranks) {
  uint16_t* d = static_cast<uint16_t*>(data);
  for (size_t i = 0; i < n; ++i) d[i] = Narrow(Widen(d[i]) / float(nranks));
}

}  // namespace

void reduce(void* dst, const void* a, const void* b, size_t n, DataType type, RedOp op) {
  switch (type) {
    case DataType::kInt8: return reduce_native<int8_t>(dst, a, b, n, op);
    case DataType::kUint8: return reduce_native<uint8_t>(dst, a, b, n, op);
    case DataType::kInt32: return reduce_native<int32_t>(dst, a, b, n, op);
    case DataType::kInt64: return reduce_native<int64_t>(dst, a, b, n, op);
    case DataType::kFloat16: return reduce_narrow<half_to_float, float_to_half>(dst, a, b, n, op);
    case DataType::kBfloat16: return reduce_narrow<bf16_to_float, float_to_bf16>(dst, a, b, n, op);
    case DataType::kFloat32: return reduce_native<float>(dst, a, b, n, op);
    case DataType::kFloat64: return reduce_native<double>(dst, a, b, n, op);
  }
}

void finalize_avg(void* data, size_t n, DataType type, int nranks) {
  switch (type) {
    case DataType::kInt8: return divide<int8_t>(data, n, nranks);
    case DataType::kUint8: return divide<uint8_t>(data, n, nranks);
    case DataType::kInt32: return divide<int32_t>(data, n, nranks);
    case DataType::kInt64: return divide<int64_t>(data, n, nranks);
    case DataType::kFloat16: return divide_narrow<half_to_float, float_to_half>(data, n, nranks);
    case DataType::kBfloat16: return divide_narrow<bf16_to_float, float_to_bf16>(data, n, nranks);
    case DataType::kFloat32: return divide<float>(data, n, nranks);
    case DataType::kFloat64: return divide<double>(data, n, nranks);
  }
}

}  // namespace xm::ccl
