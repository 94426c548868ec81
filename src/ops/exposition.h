// Prometheus's text exposition format (0.0.4), what every scraper reads: for each
// family a HELP and a TYPE line, then its samples, `name{label="value",...} value`.
// Label values are escaped (\\, \", \n); values print as integers when they are whole.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace xm::ops {

using Labels = std::vector<std::pair<std::string, std::string>>;

class Exposition {
 public:
  // Starts a family; its samples follow. `type`: counter, gauge, summary, untyped.
  void family(std::string_view name, std::string_view type, std::string_view help);
  // A sample of the current family; `suffix` for a summary's _sum and _count.
  void sample(const Labels& labels, double value, std::string_view suffix = "");
  const std::string& text() const { return text_; }

 private:
  std::string text_, name_;
};

// The media type a /metrics endpoint answers with.
inline constexpr const char* kExpositionContentType = "text/plain; version=0.0.4; charset=utf-8";

}  // namespace xm::ops
