// An optional CPU allocator for PyTorch: tensors of at least `min_bytes` come from
// xcclMemAlloc, so that xccl's peers on this host read and write them in place (one copy
// fewer each way for large messages); smaller ones from PyTorch's own allocator.
#pragma once

#include <cstddef>

namespace xccl_torch {

// From now on, in this process. Tensors allocated before keep their memory.
void use_registered_memory(size_t min_bytes);

}  // namespace xccl_torch
