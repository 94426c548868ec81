#include "ops/exposition.h"

#include <cmath>
#include <cstdio>

namespace xm::ops {
namespace {

void escaped(std::string& out, std::string_view v, bool help) {
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '"' && !help) out += "\\\"";
    else out += c;
  }
}

void number(std::string& out, double v) {
  if (std::isnan(v)) return void(out += "NaN");
  if (std::isinf(v)) return void(out += v > 0 ? "+Inf" : "-Inf");
  char buf[32];
  if (v == std::floor(v) && std::fabs(v) < 1e15) std::snprintf(buf, sizeof buf, "%.0f", v);
  else std::snprintf(buf, sizeof buf, "%.9g", v);
  out += buf;
}

}  // namespace

void Exposition::family(std::string_view name, std::string_view type, std::string_view help) {
  name_ = name;
  text_ += "# HELP ";
  text_ += name;
  text_ += ' ';
  escaped(text_, help, true);
  text_ += "\n# TYPE ";
  text_ += name;
  text_ += ' ';
  text_ += type;
  text_ += '\n';
}

void Exposition::sample(const Labels& labels, double value, std::string_view suffix) {
  text_ += name_;
  text_ += suffix;
  if (!labels.empty()) {
    text_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      if (i) text_ += ',';
      text_ += labels[i].first;
      text_ += "=\"";
      escaped(text_, labels[i].second, false);
      text_ += '"';
    }
    text_ += '}';
  }
  text_ += ' ';
  number(text_, value);
  text_ += '\n';
}

}  // namespace xm::ops
