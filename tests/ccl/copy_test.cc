// Streaming copies: the same bytes as memcpy at every alignment and length, nothing
// written outside the destination.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "ccl/copy.h"

namespace xm::ccl {
namespace {

TEST(CopyStreaming, MatchesMemcpyAtEveryAlignmentAndLength) {
  std::vector<std::byte> src(4096 + 64);
  for (size_t i = 0; i < src.size(); ++i) src[i] = std::byte((i * 37 + 11) & 0xff);
  for (size_t dst_off : {0, 1, 7, 8, 15, 16, 33})
    for (size_t src_off : {0, 3, 16})
      for (size_t n : {0, 1, 15, 16, 17, 63, 64, 65, 127, 128, 200, 1000, 4000}) {
        std::vector<std::byte> dst(4096 + 128, std::byte{0xee});
        copy_streaming(dst.data() + dst_off, src.data() + src_off, n);
        streaming_fence();
        ASSERT_EQ(std::memcmp(dst.data() + dst_off, src.data() + src_off, n), 0)
            << "dst+" << dst_off << " src+" << src_off << " n " << n;
        for (size_t i = 0; i < dst.size(); ++i) {
          bool outside = i < dst_off || i >= dst_off + n;
          ASSERT_TRUE(!outside || dst[i] == std::byte{0xee}) << "wrote byte " << i;
        }
      }
}

}  // namespace
}  // namespace xm::ccl
