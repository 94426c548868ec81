// What a tensor is to xccl: host memory of one element type. Checks that fail throw
// c10::Error (a Python RuntimeError) naming the operation and the tensor.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <xccl/xccl.h>

#include <string>
#include <vector>

namespace xccl_torch {

// The element type xccl moves a tensor's bytes as. Bool travels as uint8.
xcclDataType_t xccl_type(at::ScalarType type, const std::string& what);

// The xccl type and operator for a reduction of `type` by `op`. Bool reduces as uint8
// with SUM as MAX (logical or) and PRODUCT as MIN (logical and), as NCCL's backend does.
struct Reduction {
  xcclDataType_t type;
  xcclRedOp_t op;
};
Reduction reduction(at::ScalarType type, const c10d::ReduceOp& op, const std::string& what);

// A CPU, strided tensor of a type xccl moves, or an error.
void check(const at::Tensor& t, const std::string& what);
// check(), then the tensor if contiguous, else a contiguous copy (the caller copies
// results back).
at::Tensor dense(const at::Tensor& t, const std::string& what);
// `tensors` holds exactly one tensor (one process, one device).
const at::Tensor& single(const std::vector<at::Tensor>& tensors, const std::string& what);
// Every tensor has `like`'s type and element count.
void check_same(const std::vector<at::Tensor>& tensors, const at::Tensor& like, const std::string& what);

}  // namespace xccl_torch
