// Rails: the NICs a rank sends through, one address each, with their speeds.
//   XCCL_RAILS="10.0.0.1@400,10.1.0.1@400"   (address[@Gbit/s], one per NIC; speed default 100)
// Connections are rail-affine: a rank's rail r talks only to a peer's rail r.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "util/result.h"

namespace xm::ccl {

struct Rail {
  std::string host;   // address to bind and to be reached at
  uint16_t port = 0;  // listening port (0 until listening)
  double gbps = 100;
};

// Parses XCCL_RAILS; an empty string gives one rail at `fallback_host`.
Result<std::vector<Rail>> parse_rails(const std::string& text, const std::string& fallback_host);

// "host:port@gbps,..." for the bootstrap blob, and back.
std::string encode_rails(const std::vector<Rail>& rails);
Result<std::vector<Rail>> decode_rails(const std::string& text);

// Which rail carries stripe k of a stream: smooth weighted round robin over the
// weights, so each rail carries stripes in proportion to its speed and both ends of a
// link compute the same sequence.
class StripePlan {
 public:
  StripePlan() = default;
  explicit StripePlan(std::vector<double> weights);
  size_t next();  // the rail of the next stripe
  size_t peek() const { return StripePlan(*this).next(); }  // next() without taking it
  size_t rails() const { return weights_.size(); }

 private:
  std::vector<double> weights_, current_;
  double total_ = 0;
};

}  // namespace xm::ccl
