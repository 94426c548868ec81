#include "tensors.h"

#include <c10/util/Exception.h>

namespace xccl_torch {

xcclDataType_t xccl_type(at::ScalarType type, const std::string& what) {
  switch (type) {
    case at::kFloat: return xcclFloat32;
    case at::kDouble: return xcclFloat64;
    case at::kHalf: return xcclFloat16;
    case at::kBFloat16: return xcclBfloat16;
    case at::kChar: return xcclInt8;
    case at::kByte: return xcclUint8;
    case at::kBool: return xcclUint8;
    case at::kInt: return xcclInt32;
    case at::kLong: return xcclInt64;
    default: break;
  }
  TORCH_CHECK(false, what, ": xccl has no ", c10::toString(type),
              " (float16, bfloat16, float32, float64, int8, uint8, int32, int64 and bool it has)");
}

Reduction reduction(at::ScalarType type, const c10d::ReduceOp& op, const std::string& what) {
  const bool boolean = type == at::kBool;
  Reduction r{xccl_type(type, what), xcclSum};
  switch (op.op_) {
    case c10d::ReduceOp::SUM: r.op = boolean ? xcclMax : xcclSum; break;
    case c10d::ReduceOp::PRODUCT: r.op = boolean ? xcclMin : xcclProd; break;
    case c10d::ReduceOp::MIN: r.op = xcclMin; break;
    case c10d::ReduceOp::MAX: r.op = xcclMax; break;
    case c10d::ReduceOp::AVG:
      TORCH_CHECK(!boolean, what, ": ReduceOp.AVG of bool tensors has no meaning");
      r.op = xcclAvg;
      break;
    case c10d::ReduceOp::BAND:
    case c10d::ReduceOp::BOR:
    case c10d::ReduceOp::BXOR:
      TORCH_CHECK(false, what, ": xccl has no bitwise reductions (BAND, BOR, BXOR); it has SUM, PRODUCT, MIN, MAX and AVG");
    default: TORCH_CHECK(false, what, ": xccl does not support this ReduceOp (", int(op.op_), ")");
  }
  return r;
}

void check(const at::Tensor& t, const std::string& what) {
  TORCH_CHECK(t.defined(), what, ": an undefined tensor");
  TORCH_CHECK(t.device().is_cpu(), what, ": xccl moves host memory; the tensor is on ", t.device());
  TORCH_CHECK(t.layout() == at::kStrided, what, ": sparse tensors are not supported (layout ", t.layout(), ")");
  xccl_type(t.scalar_type(), what);
}

at::Tensor dense(const at::Tensor& t, const std::string& what) {
  check(t, what);
  return t.is_contiguous() ? t : t.contiguous();
}

const at::Tensor& single(const std::vector<at::Tensor>& tensors, const std::string& what) {
  TORCH_CHECK(tensors.size() == 1, what, ": takes one tensor per process, got ", tensors.size());
  return tensors[0];
}

void check_same(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const std::string& what) {
  for (size_t i = 0; i < tensors.size(); ++i) {
    TORCH_CHECK(tensors[i].scalar_type() == like.scalar_type(), what, ": tensor ", i, " is ", tensors[i].scalar_type(),
                ", expected ", like.scalar_type());
    TORCH_CHECK(tensors[i].numel() == like.numel(), what, ": tensor ", i, " has ", tensors[i].numel(),
                " elements, expected ", like.numel());
  }
}

}  // namespace xccl_torch
