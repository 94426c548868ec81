#include "ccl/log.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace xm::ccl {
namespace {

struct Config {
  LogLevel level = LogLevel::kWarn;
  unsigned subsys = ~0u;
  std::string host;
};

const char* subsys_name(Subsys s) {
  static const char* names[] = {"INIT", "BOOT", "NET", "SHM", "COLL", "TUNE"};
  return names[int(s)];
}

// Read once from the environment; read-only afterwards.
const Config& config() {
  static const Config c = [] {
    Config c;
    if (const char* v = std::getenv("XCCL_DEBUG")) {
      std::string s = v;
      c.level = s == "NONE" ? LogLevel::kNone : s == "INFO" ? LogLevel::kInfo : s == "TRACE" ? LogLevel::kTrace : LogLevel::kWarn;
    }
    if (const char* v = std::getenv("XCCL_DEBUG_SUBSYS")) {
      c.subsys = 0;
      std::string s = std::string(v) + ",";
      for (int i = 0; i < 6; ++i)
        if (s.find(std::string(subsys_name(Subsys(i))) + ",") != std::string::npos) c.subsys |= 1u << i;
    }
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    c.host = host;
    return c;
  }();
  return c;
}

}  // namespace

bool log_enabled(LogLevel level, Subsys subsys) {
  const Config& c = config();
  return level <= c.level && level != LogLevel::kNone && (c.subsys & (1u << int(subsys)));
}

void log_line(LogLevel level, Subsys subsys, int rank, const std::string& message) {
  static std::mutex mu;
  const char* lv = level == LogLevel::kWarn ? "WARN" : level == LogLevel::kInfo ? "INFO" : "TRACE";
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "%s:%d:%d [xccl] %s %s %s\n", config().host.c_str(), int(getpid()), rank, lv,
               subsys_name(subsys), message.c_str());
}

}  // namespace xm::ccl
