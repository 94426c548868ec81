#include "sim/collective/results.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "util/format.h"

namespace xm::sim {
namespace {

// Throughput per rail and time bin, per sending rank: each message's bytes spread
// evenly over its life, from its start to its last byte's arrival. Rails by index;
// UINT32_MAX is "intra".
struct RailSeries {
  double t0_us = 0, bin_us = 0;
  std::map<uint32_t, std::vector<double>> gbps;
};

RailSeries rail_series(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays, int bins) {
  RailSeries s;
  double t0 = 1e300, t1 = 0;
  for (const CollectiveReplay& r : replays)
    for (size_t i = 0; i < r.flows.size(); ++i) {
      const FlowOutcome& f = flows[r.first_flow + i];
      if (!f.received || f.bytes == 0) continue;  // barriers carry nothing
      t0 = std::min(t0, f.start.us_f()), t1 = std::max(t1, f.received_at.us_f());
    }
  if (t1 <= t0) return s;
  s.t0_us = t0, s.bin_us = (t1 - t0) / bins;
  for (const CollectiveReplay& r : replays)
    for (size_t i = 0; i < r.flows.size(); ++i) {
      const FlowOutcome& f = flows[r.first_flow + i];
      if (f.bytes == 0) continue;
      std::vector<double>& row = s.gbps[r.flows[i].rail];
      row.resize(bins, 0);
      if (!f.received) continue;
      const double a = f.start.us_f() - t0, b = f.received_at.us_f() - t0, life = std::max(b - a, 1e-9);
      for (int k = std::max(0, int(a / s.bin_us)); k < bins && k * s.bin_us < b; ++k) {
        const double overlap = std::min(b, (k + 1) * s.bin_us) - std::max(a, k * s.bin_us);
        if (overlap > 0) row[k] += double(f.bytes) * overlap / life;
      }
    }
  // Per sender: the rail's (or the intra fabric's) senders, so the line reads against
  // one NIC's speed.
  std::map<uint32_t, std::set<uint64_t>> senders;
  for (size_t c = 0; c < replays.size(); ++c)
    for (const ReplayedFlow& f : replays[c].flows) senders[f.rail].insert(uint64_t(c) << 32 | f.src_rank);
  for (auto& [rail, row] : s.gbps)
    for (double& v : row) v = v * 8 / (s.bin_us * 1e3) / double(std::max<size_t>(1, senders[rail].size()));
  return s;
}

std::string rail_name(uint32_t rail) { return rail == UINT32_MAX ? "intra" : std::to_string(rail); }

}  // namespace

std::vector<CollectiveResult> collective_results(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays) {
  std::vector<CollectiveResult> out;
  for (const CollectiveReplay& r : replays) {
    CollectiveResult c;
    c.name = r.options.name, c.op = sched::to_string(r.options.op), c.algorithm = r.algorithm;
    c.ranks = r.ranks, c.bytes = r.options.bytes, c.flows = r.flows.size();
    double start = 1e300, end = 0;
    for (size_t i = 0; i < r.flows.size(); ++i) {
      const FlowOutcome& f = flows[r.first_flow + i];
      if (f.started) start = std::min(start, f.start.us_f());
      if (f.received) ++c.finished, end = std::max(end, f.received_at.us_f());
    }
    if (c.finished == c.flows && c.flows > 0) {
      c.start_us = start, c.end_us = end, c.time_us = end - start;
      c.algbw_gbs = c.time_us > 0 ? double(c.bytes) / (c.time_us * 1e3) : 0;
      c.busbw_gbs = c.algbw_gbs * sched::bus_factor(r.options.op, r.ranks);
    }
    out.push_back(c);
  }
  return out;
}

std::string collectives_csv(const std::vector<CollectiveResult>& results, const std::string& cc) {
  std::string s = "cc,collective,op,algorithm,ranks,bytes,flows,finished,start_us,end_us,time_us,algbw_gbs,busbw_gbs\n";
  for (const CollectiveResult& c : results)
    s += cc + "," + c.name + "," + c.op + "," + c.algorithm + "," + std::to_string(c.ranks) + "," +
         std::to_string(c.bytes) + "," + std::to_string(c.flows) + "," + std::to_string(c.finished) + "," +
         formatted("%.3f", c.start_us) + "," + formatted("%.3f", c.end_us) + "," + formatted("%.3f", c.time_us) + "," +
         formatted("%.3f", c.algbw_gbs) + "," + formatted("%.3f", c.busbw_gbs) + "\n";
  return s;
}

std::string ranks_csv(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays) {
  std::string s = "collective,rank,first_send_us,last_arrival_us,bytes_sent,bytes_received\n";
  for (const CollectiveReplay& r : replays) {
    std::vector<double> first(r.ranks, 1e300), last(r.ranks, 0);
    std::vector<uint64_t> sent(r.ranks, 0), received(r.ranks, 0);
    for (size_t i = 0; i < r.flows.size(); ++i) {
      const FlowOutcome& f = flows[r.first_flow + i];
      const ReplayedFlow& rf = r.flows[i];
      if (f.bytes == 0) continue;
      sent[rf.src_rank] += f.bytes, received[rf.dst_rank] += f.bytes;
      if (f.started) first[rf.src_rank] = std::min(first[rf.src_rank], f.start.us_f());
      if (f.received) last[rf.dst_rank] = std::max(last[rf.dst_rank], f.received_at.us_f());
    }
    for (int k = 0; k < r.ranks; ++k)
      s += r.options.name + "," + std::to_string(k) + "," + formatted("%.3f", first[k] < 1e300 ? first[k] : 0) + "," +
           formatted("%.3f", last[k]) + "," + std::to_string(sent[k]) + "," + std::to_string(received[k]) + "\n";
  }
  return s;
}

std::string rails_csv(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays, int bins) {
  const RailSeries s = rail_series(flows, replays, bins);
  std::string out = "t_us,rail,gbps\n";
  for (const auto& [rail, row] : s.gbps)
    for (int k = 0; k < int(row.size()); ++k)
      out += formatted("%.3f", s.t0_us + (k + 0.5) * s.bin_us) + "," + rail_name(rail) + "," + formatted("%.3f", row[k]) + "\n";
  return out;
}

std::string rails_svg(const std::vector<FlowOutcome>& flows, const std::vector<CollectiveReplay>& replays, const std::string& title,
                      int bins) {
  static const char* colours[] = {"#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f"};
  const RailSeries s = rail_series(flows, replays, bins);
  const double W = 900, H = 420, x0 = 70, y0 = 50, pw = 680, ph = 300;
  double ymax = 1;
  for (const auto& [rail, row] : s.gbps)
    for (double v : row) ymax = std::max(ymax, v);
  ymax *= 1.1;
  const double span = std::max(s.bin_us * bins, 1e-9);
  auto X = [&](double t) { return x0 + (t - s.t0_us) / span * pw; };
  auto Y = [&](double v) { return y0 + ph - v / ymax * ph; };
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + formatted("%g", W) + "\" height=\"" + formatted("%g", H) +
                    "\" font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  svg += "<text x=\"" + formatted("%g", W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"15\">" + title + "</text>\n";
  svg += "<rect x=\"" + formatted("%g", x0) + "\" y=\"" + formatted("%g", y0) + "\" width=\"" + formatted("%g", pw) + "\" height=\"" +
         formatted("%g", ph) + "\" fill=\"none\" stroke=\"black\"/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double v = ymax * k / 4, t = s.t0_us + span * k / 4;
    svg += "<text x=\"" + formatted("%g", x0 - 6) + "\" y=\"" + formatted("%g", Y(v) + 4) + "\" text-anchor=\"end\">" +
           formatted("%.0f", v) + "</text>\n";
    svg += "<text x=\"" + formatted("%g", X(t)) + "\" y=\"" + formatted("%g", y0 + ph + 16) + "\" text-anchor=\"middle\">" +
           formatted("%.0f", t) + "</text>\n";
  }
  svg += "<text x=\"" + formatted("%g", x0 + pw / 2) + "\" y=\"" + formatted("%g", y0 + ph + 36) +
         "\" text-anchor=\"middle\">simulated time (us)</text>\n";
  svg += "<text x=\"18\" y=\"" + formatted("%g", y0 + ph / 2) + "\" transform=\"rotate(-90 18 " + formatted("%g", y0 + ph / 2) +
         ")\" text-anchor=\"middle\">Gbit/s per sending rank</text>\n";
  int i = 0;
  for (const auto& [rail, row] : s.gbps) {
    const char* colour = rail == UINT32_MAX ? "#000000" : colours[i % 8];
    std::string points;
    for (int k = 0; k < int(row.size()); ++k)
      points += formatted("%.1f", X(s.t0_us + (k + 0.5) * s.bin_us)) + "," + formatted("%.1f", Y(row[k])) + " ";
    svg += "<polyline fill=\"none\" stroke=\"" + std::string(colour) + "\" stroke-width=\"1.5\" points=\"" + points + "\"/>\n";
    svg += "<text x=\"" + formatted("%g", x0 + pw + 12) + "\" y=\"" + formatted("%g", y0 + 14 + 16 * i) + "\" fill=\"" + colour +
           "\">rail " + rail_name(rail) + "</text>\n";
    ++i;
  }
  return svg + "</svg>\n";
}

std::string collectives_text(const std::vector<CollectiveResult>& results, const std::string& cc) {
  std::string s;
  for (const CollectiveResult& c : results) {
    char line[256];
    if (c.finished == c.flows)
      std::snprintf(line, sizeof line, "%-6s %-14s %-14s %-17s %5d ranks %12llu B  %10.2f us  algbw %8.3f  busbw %8.3f GB/s\n",
                    cc.c_str(), c.name.c_str(), c.op.c_str(), c.algorithm.c_str(), c.ranks, (unsigned long long)c.bytes,
                    c.time_us, c.algbw_gbs, c.busbw_gbs);
    else
      std::snprintf(line, sizeof line, "%-6s %-14s %-14s %-17s %5d ranks %12llu B  unfinished: %zu of %zu flows\n",
                    cc.c_str(), c.name.c_str(), c.op.c_str(), c.algorithm.c_str(), c.ranks, (unsigned long long)c.bytes,
                    c.finished, c.flows);
    s += line;
  }
  return s;
}

}  // namespace xm::sim
