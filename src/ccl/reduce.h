// Element-wise reduction kernels: the arithmetic of every reducing collective.
//
// Thread-safe, allocation-free. fp16 and bf16 are reduced in fp32 and rounded back to
// nearest-even once per call, as NCCL does. Integer sum/prod wrap (two's complement);
// avg is sum followed by finalize_avg on the rank that holds the last partial sum.
#pragma once

#include <cstddef>

#include "ccl/schedules.h"

namespace xm::ccl {

// dst[i] = a[i] op b[i] for i < count. dst may alias a or b. For kAvg this sums.
void reduce(void* dst, const void* a, const void* b, size_t count, DataType type, RedOp op);

// data[i] /= nranks (integer types: truncating division, as NCCL's avg on integers).
void finalize_avg(void* data, size_t count, DataType type, int nranks);

// Conversions used by the kernels and by tests.
float half_to_float(uint16_t h);
uint16_t float_to_half(float f);
float bf16_to_float(uint16_t b);
uint16_t float_to_bf16(float f);

}  // namespace xm::ccl
