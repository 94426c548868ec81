// A log-linear histogram of non-negative integers (queue lengths in bytes): 16 buckets
// per power of two, so percentiles are within ~6 % with a fixed 1 KiB of counters.
#pragma once

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>

namespace xm::sim {

class Histogram {
 public:
  void add(uint64_t v, uint64_t weight = 1) {
    counts_[bucket(v)] += weight;
    total_ += weight;
    if (v > max_) max_ = v;
  }
  void merge(const Histogram& o) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += o.counts_[i];
    total_ += o.total_;
    if (o.max_ > max_) max_ = o.max_;
  }
  uint64_t count() const { return total_; }
  uint64_t max() const { return max_; }

  // The value below which a fraction q of the samples fall (upper edge of its bucket,
  // capped at the largest sample); 0 when empty.
  uint64_t percentile(double q) const {
    if (total_ == 0) return 0;
    const double target = q * double(total_);
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
      seen += counts_[i];
      if (double(seen) >= target && counts_[i] > 0) {
        uint64_t edge = upper(i);
        return edge < max_ ? edge : max_;
      }
    }
    return max_;
  }

 private:
  static constexpr int kSub = 16;  // buckets per power of two
  static size_t bucket(uint64_t v) {
    if (v < kSub) return size_t(v);
    const int e = 63 - std::countl_zero(v);  // v in [2^e, 2^(e+1)), e >= 4
    const uint64_t sub = (v >> (e - 4)) & (kSub - 1);
    return size_t(kSub + (e - 4) * kSub + int(sub));
  }
  static uint64_t upper(size_t i) {
    if (i < kSub) return i;
    const int e = int(i - kSub) / kSub + 4;
    const uint64_t sub = (i - kSub) % kSub;
    return ((uint64_t(kSub) + sub + 1) << (e - 4)) - 1;
  }
  std::array<uint64_t, kSub + 60 * kSub> counts_{};
  uint64_t total_ = 0, max_ = 0;
};

}  // namespace xm::sim
