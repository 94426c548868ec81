// Rails the fabric's operators advise against (XCCL_RAIL_ADVICE=FILE): the controller
// of `xm ops monitor` writes there the addresses of host NICs whose cable, NIC or ToR it
// found faulty — one per line, anything after a '#' a comment — and replaces the file
// whole when that changes. A rail whose own address or whose peer's address on the same
// rail is listed carries stripes only while no rail that is not can (TcpLink::advise):
// the job moves off a lossy rail in the controller's time, before TCP's own failover
// (rail_health.h) would call a merely lossy rail dead, and moves back when the advice
// is withdrawn.
#pragma once

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <sys/types.h>

namespace xm::ccl {

// The addresses a rail-advice file lists.
std::set<std::string> parse_rail_advice(const std::string& text);

class RailAdviceFile {
 public:
  explicit RailAdviceFile(std::string path) : path_(std::move(path)) {}
  // Reads the file again when it changed, at most every `every`; true when what it
  // advises changed. A missing file advises nothing.
  bool refresh(std::chrono::steady_clock::time_point now, std::chrono::milliseconds every = std::chrono::milliseconds(250));
  bool advised(const std::string& address) const { return addresses_.count(address) > 0; }
  const std::set<std::string>& addresses() const { return addresses_; }
  uint64_t version() const { return version_; }  // how many times the advice changed

 private:
  std::string path_;
  std::chrono::steady_clock::time_point next_{};
  struct Stamp {
    long long mtime_ns = -1;
    off_t size = -1;
    ino_t inode = 0;
    bool operator==(const Stamp&) const = default;
  } seen_;
  std::set<std::string> addresses_;
  uint64_t version_ = 0;
};

}  // namespace xm::ccl
