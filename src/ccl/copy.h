// Copying bytes into a buffer nobody will read soon: streaming (non-temporal) stores write
// whole lines straight to memory, skipping the read each cached store pays for a line not
// in cache and leaving the cache to what will be read (measured: docs/performance.md).
#pragma once

#include <cstddef>

namespace xm::ccl {

// dst[0, n) = src[0, n); the buffers do not overlap. Streaming where the CPU has it
// (x86-64: SSE2), else memcpy. Before another thread or process may read dst, call
// streaming_fence().
void copy_streaming(void* dst, const void* src, size_t n);
// Orders earlier streaming stores before every later store (they are weakly ordered).
void streaming_fence();

}  // namespace xm::ccl
