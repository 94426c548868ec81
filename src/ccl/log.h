// xccl's debug log, chosen at run time like NCCL_DEBUG:
//   XCCL_DEBUG=WARN (default) | INFO | TRACE | NONE
//   XCCL_DEBUG_SUBSYS=INIT,BOOT,NET,SHM,COLL,TUNE (default: all)
// Lines go to stderr as "host:pid:rank [xccl] LEVEL SUBSYS message".
#pragma once

#include <string>

namespace xm::ccl {

enum class LogLevel { kNone, kWarn, kInfo, kTrace };
enum class Subsys { kInit, kBoot, kNet, kShm, kColl, kTune };

bool log_enabled(LogLevel level, Subsys subsys);
void log_line(LogLevel level, Subsys subsys, int rank, const std::string& message);

// Logs `message` (built only when enabled).
#define XCCL_LOG(level, subsys, rank, ...)                                        \
  do {                                                                              \
    if (::xm::ccl::log_enabled(level, subsys))                                      \
      ::xm::ccl::log_line(level, subsys, rank, __VA_ARGS__);                        \
  } while (0)

}  // namespace xm::ccl
