// Element types and reduction operators: what a schedule's counts are counted in (the
// runtime reduces them; the simulator only needs their size). The values match the
// public enums in include/xccl/xccl.h one to one.
#pragma once

#include <cstddef>
#include <cstdint>

namespace xm::sched {

enum class DataType : uint8_t { kInt8, kUint8, kInt32, kInt64, kFloat16, kBfloat16, kFloat32, kFloat64 };
inline constexpr int kDataTypes = 8;
enum class RedOp : uint8_t { kSum, kProd, kMin, kMax, kAvg };
inline constexpr int kRedOps = 5;

size_t size_of(DataType type);
const char* to_string(DataType type);  // "int8", "float", "half", "bfloat16" ... as nccl-tests names them
const char* to_string(RedOp op);       // "sum", "prod", "min", "max", "avg"

}  // namespace xm::sched
