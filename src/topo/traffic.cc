#include "topo/traffic.h"

#include <cmath>
#include <cstdlib>

namespace xm::topo {

Result<Pattern> parse_pattern(std::string_view name) {
  if (name == "ring") return Pattern::kRing;
  if (name == "rail-rings") return Pattern::kRailRings;
  if (name == "all-to-all") return Pattern::kAllToAll;
  return Error{"unknown pattern \"" + std::string(name) + "\" (expected ring, rail-rings or all-to-all)"};
}

Result<std::vector<Demand>> pattern_demands(const Fabric& f, Pattern pattern) {
  const uint32_t n = f.count(NodeKind::kAccelerator);
  const uint32_t servers = f.spec().servers, local = f.spec().server.accelerators;
  std::vector<Demand> out;
  switch (pattern) {
    case Pattern::kRing:
      for (uint32_t r = 0; r < n; ++r) out.push_back({r, (r + 1) % n, 1.0});
      break;
    case Pattern::kRailRings:
      for (uint32_t g = 0; g < local; ++g)
        for (uint32_t s = 0; s < servers; ++s) out.push_back({s * local + g, ((s + 1) % servers) * local + g, 1.0});
      break;
    case Pattern::kAllToAll:
      if (n > kMaxAllToAll)
        return Error{"all-to-all over " + std::to_string(n) + " accelerators is too large to enumerate (limit " +
                     std::to_string(kMaxAllToAll) + ")"};
      out.reserve(size_t(n) * (n - 1));
      for (uint32_t a = 0; a < n; ++a)
        for (uint32_t b = 0; b < n; ++b)
          if (a != b) out.push_back({a, b, 1.0});
      break;
  }
  return out;
}

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

Result<std::vector<Demand>> parse_traffic_csv(const Fabric& f, std::string_view text, const std::string& source) {
  std::vector<Demand> out;
  const NodeId base = f.first(NodeKind::kAccelerator);
  size_t line_no = 0;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    ++line_no;
    std::string_view body = trim(line);
    if (body.empty() || body.front() == '#' || (line_no == 1 && body == "src,dst,bytes")) continue;

    std::string where = source + ":" + std::to_string(line_no);
    std::string_view cells[3];
    size_t columns[3];
    size_t start = 0, count = 0;
    for (; count < 3; ++count) {
      size_t comma = line.find(',', start);
      columns[count] = start + 1;
      cells[count] = trim(line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (count != 2) return Error{where + ": expected three fields src,dst,bytes"};

    Demand d;
    for (int i = 0; i < 2; ++i) {
      Result<NodeId> id = f.find(cells[i]);
      if (!id || f.node(*id).kind != NodeKind::kAccelerator)
        return Error{where + ":" + std::to_string(columns[i]) + ": " + (i ? "dst" : "src") + ": " +
                     (id ? f.name(*id) + " is not an accelerator" : id.error().message)};
      (i ? d.dst : d.src) = *id - base;
    }
    std::string bytes(cells[2]);
    char* stop = nullptr;
    d.bytes = std::strtod(bytes.c_str(), &stop);
    if (bytes.empty() || stop != bytes.c_str() + bytes.size() || !std::isfinite(d.bytes) || d.bytes < 0)
      return Error{where + ":" + std::to_string(columns[2]) + ": bytes: expected a number of bytes, got \"" + bytes +
                   "\""};
    out.push_back(d);
  }
  return out;
}

}  // namespace xm::topo
