// Wall-clock time as the operations side records it: seconds since the Unix epoch, as
// Prometheus, the inventory and the JSON APIs carry it.
#pragma once

#include <chrono>

namespace xm {

inline double unix_seconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace xm
