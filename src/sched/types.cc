#include "sched/types.h"

namespace xm::sched {

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

}  // namespace xm::sched
