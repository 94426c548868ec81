#include "sim/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "util/format.h"

namespace xm::sim {
namespace {

constexpr const char* kColours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};

// The x position of a bucket: the geometric middle of its size range.
double bucket_x(const SlowdownRow& s, uint64_t largest) {
  const double lo = std::max<double>(1, double(s.lo));
  const double hi = s.hi == UINT64_MAX ? std::max<double>(lo * 3, double(largest)) : double(s.hi);
  return std::sqrt(lo * hi);
}

}  // namespace

std::string slowdown_svg(const std::vector<Report>& reports, const std::string& title) {
  const double W = 1000, H = 420, panel_w = 440, panel_h = 300, top = 60;
  uint64_t largest = 1;
  double ymax = 2;
  for (const Report& r : reports)
    for (const SlowdownRow& s : r.slowdown)
      if (s.label != "all" && s.flows > 0) {
        largest = std::max(largest, s.lo * 3);
        ymax = std::max(ymax, s.p99);
      }
  double xmin = 1e300, xmax = 1;
  for (const Report& r : reports)
    for (const SlowdownRow& s : r.slowdown)
      if (s.label != "all" && s.flows > 0) xmin = std::min(xmin, bucket_x(s, largest)), xmax = std::max(xmax, bucket_x(s, largest));
  if (xmin >= xmax) xmin = 1, xmax = 10;
  const double lx0 = std::floor(std::log10(xmin)), lx1 = std::ceil(std::log10(xmax));
  const double ly1 = std::max(1.0, std::ceil(std::log10(ymax) * 2) / 2);  // half decades

  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + formatted("%g", W) + "\" height=\"" + formatted("%g", H) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + formatted("%g", W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + title + "</text>\n";
  const char* metrics[] = {"p50", "p99"};
  for (int panel = 0; panel < 2; ++panel) {
    const double x0 = 70 + panel * (panel_w + 60), y0 = top;
    auto X = [&](double v) { return x0 + (std::log10(v) - lx0) / (lx1 - lx0) * panel_w; };
    auto Y = [&](double v) { return y0 + panel_h - std::log10(std::max(v, 1.0)) / ly1 * panel_h; };
    svg += "<rect x=\"" + formatted("%g", x0) + "\" y=\"" + formatted("%g", y0) + "\" width=\"" + formatted("%g", panel_w) + "\" height=\"" +
           formatted("%g", panel_h) + "\" fill=\"none\" stroke=\"black\"/>\n";
    for (double e = lx0; e <= lx1; e += 1) {
      const double x = X(std::pow(10, e));
      svg += "<line x1=\"" + formatted("%g", x) + "\" y1=\"" + formatted("%g", y0) + "\" x2=\"" + formatted("%g", x) + "\" y2=\"" +
             formatted("%g", y0 + panel_h) + "\" stroke=\"#ddd\"/>\n";
      svg += "<text x=\"" + formatted("%g", x) + "\" y=\"" + formatted("%g", y0 + panel_h + 16) + "\" text-anchor=\"middle\">" +
             size_label(uint64_t(std::pow(10, e))) + "</text>\n";
    }
    for (double e = 0; e <= ly1 + 1e-9; e += 0.5) {
      const double v = std::pow(10, e), y = Y(v);
      svg += "<line x1=\"" + formatted("%g", x0) + "\" y1=\"" + formatted("%g", y) + "\" x2=\"" + formatted("%g", x0 + panel_w) + "\" y2=\"" +
             formatted("%g", y) + "\" stroke=\"#ddd\"/>\n";
      svg += "<text x=\"" + formatted("%g", x0 - 6) + "\" y=\"" + formatted("%g", y + 4) + "\" text-anchor=\"end\">" + formatted("%.3g", v) + "</text>\n";
    }
    svg += "<text x=\"" + formatted("%g", x0 + panel_w / 2) + "\" y=\"" + formatted("%g", y0 + panel_h + 36) +
           "\" text-anchor=\"middle\">flow size (bytes)</text>\n";
    svg += "<text x=\"" + formatted("%g", x0 + panel_w / 2) + "\" y=\"" + formatted("%g", y0 - 8) + "\" text-anchor=\"middle\">" +
           metrics[panel] + " FCT slowdown</text>\n";
    for (size_t i = 0; i < reports.size(); ++i) {
      const char* colour = kColours[i % 8];
      std::string points;
      for (const SlowdownRow& s : reports[i].slowdown) {
        if (s.label == "all" || s.flows == 0) continue;
        const double v = panel == 0 ? s.p50 : s.p99;
        const double x = X(bucket_x(s, largest)), y = Y(v);
        points += formatted("%.1f,", x) + formatted("%.1f ", y);
        svg += "<circle cx=\"" + formatted("%.1f", x) + "\" cy=\"" + formatted("%.1f", y) + "\" r=\"3\" fill=\"" + colour + "\"/>\n";
      }
      svg += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(colour) + "\" points=\"" + points + "\"/>\n";
    }
  }
  for (size_t i = 0; i < reports.size(); ++i) {
    const double x = 80 + double(i) * 150, y = H - 24;
    svg += "<rect x=\"" + formatted("%g", x) + "\" y=\"" + formatted("%g", y - 9) + "\" width=\"18\" height=\"4\" fill=\"" +
           kColours[i % 8] + "\"/><text x=\"" + formatted("%g", x + 24) + "\" y=\"" + formatted("%g", y) + "\">" + reports[i].cc +
           "</text>\n";
  }
  return svg + "</svg>\n";
}

}  // namespace xm::sim
