#include "ccl/copy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace xm::ccl {

void copy_streaming(void* dst, const void* src, size_t n) {
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<const std::byte*>(src);
#if defined(__SSE2__)
  // Cached stores up to the first line boundary of dst, streaming stores a whole line at
  // a time after it, cached stores for the tail. (Streaming stores that start 16 or 32
  // bytes into a line fill two partial lines per four stores: measured 14-15 GB/s
  // against 17 at 16 MiB.)
  size_t head = std::min(n, size_t((64 - reinterpret_cast<uintptr_t>(d) % 64) % 64));
  std::memcpy(d, s, head);
  d += head, s += head, n -= head;
  size_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i));
    __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 16));
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 32));
    __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i + 48), e);
  }
  d += i, s += i, n -= i;
#endif
  std::memcpy(d, s, n);
}

void streaming_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

}  // namespace xm::ccl
