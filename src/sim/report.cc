#include "sim/report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace xm::sim {

std::vector<uint64_t> default_buckets() {
  return {3'000, 10'000, 30'000, 100'000, 300'000, 1'000'000, 3'000'000, 10'000'000};
}

std::string size_label(uint64_t bytes) {
  char buf[32];
  if (bytes >= 1'000'000) std::snprintf(buf, sizeof buf, "%gM", double(bytes) / 1e6);
  else if (bytes >= 1'000) std::snprintf(buf, sizeof buf, "%gK", double(bytes) / 1e3);
  else std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(bytes));
  return buf;
}

uint64_t peak_rss_kb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return uint64_t(usage.ru_maxrss);
}

namespace {

// Nearest-rank percentile of sorted values.
double percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  size_t rank = size_t(std::ceil(q * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

SlowdownRow row(std::string label, uint64_t lo, uint64_t hi, std::vector<double> v) {
  std::sort(v.begin(), v.end());
  SlowdownRow r;
  r.label = std::move(label), r.lo = lo, r.hi = hi, r.flows = v.size();
  r.p50 = percentile(v, 0.50), r.p95 = percentile(v, 0.95), r.p99 = percentile(v, 0.99);
  double sum = 0;
  for (double x : v) sum += x;
  r.mean = v.empty() ? 0 : sum / double(v.size());
  return r;
}

// Slowdowns per flow-size bucket (edges: upper bounds), then "all".
std::vector<SlowdownRow> slowdown_rows(const std::vector<std::pair<uint64_t, double>>& flows,
                                       const std::vector<uint64_t>& edges) {
  std::vector<std::vector<double>> by_bucket(edges.size() + 1);
  std::vector<double> all;
  for (auto [bytes, slowdown] : flows) {
    by_bucket[size_t(std::lower_bound(edges.begin(), edges.end(), bytes) - edges.begin())].push_back(slowdown);
    all.push_back(slowdown);
  }
  std::vector<SlowdownRow> rows;
  for (size_t b = 0; b <= edges.size(); ++b) {
    const uint64_t lo = b == 0 ? 0 : edges[b - 1];
    const uint64_t hi = b < edges.size() ? edges[b] : UINT64_MAX;
    std::string label = b == 0 ? "<=" + size_label(hi) : hi == UINT64_MAX ? ">" + size_label(lo)
                                                                           : size_label(lo) + "-" + size_label(hi);
    rows.push_back(row(label, lo, hi, std::move(by_bucket[b])));
  }
  rows.push_back(row("all", 0, UINT64_MAX, std::move(all)));
  return rows;
}

}  // namespace

Report make_report(const FluidNetwork& net, const std::vector<uint64_t>& edges) {
  Report rep;
  rep.flows = net.flow_count();
  std::vector<std::pair<uint64_t, double>> done;
  const std::vector<FlowOutcome> outcomes = net.outcomes();
  for (size_t i = 0; i < outcomes.size(); ++i) {
    const FlowOutcome& f = outcomes[i];
    if (!f.received) continue;
    ++rep.finished;
    rep.last_finish_us = std::max(rep.last_finish_us, f.received_at.us_f());
    if (f.bytes > 0)
      done.push_back({f.bytes, std::max(1.0, double((f.received_at - f.start).ps()) / double(net.ideal(uint32_t(i)).ps()))});
  }
  rep.slowdown = slowdown_rows(done, edges);
  rep.queues.push_back(QueueRow{"all switches", 0, 0, 0, 0, 0});  // fluids queue nowhere
  rep.sim_seconds = net.now().seconds_f();
  rep.events = net.events();
  return rep;
}

Report make_report(const Network& net, const std::vector<uint64_t>& edges) {
  Report rep;
  rep.cc = "";
  const std::vector<Flow>& flows = net.flows();
  rep.flows = flows.size();
  std::vector<std::pair<uint64_t, double>> done;
  for (const Flow& f : flows) {
    if (f.state != FlowState::kDone) continue;
    ++rep.finished;
    rep.last_finish_us = std::max(rep.last_finish_us, f.finish.us_f());
    if (f.size > 0)  // barriers have no size to slow down
      done.push_back({f.size, std::max(1.0, double((f.finish - f.start).ps()) / double(f.ideal.ps()))});
  }
  rep.slowdown = slowdown_rows(done, edges);
  rep.counters = net.counters();

  const std::vector<std::string>& classes = net.link_classes();
  Histogram switches;
  for (size_t c = 0; c < classes.size(); ++c) {
    const Histogram& h = net.queue_histograms()[c];
    if (h.count() == 0) continue;
    switches.merge(h);
    rep.queues.push_back(QueueRow{classes[c], h.count(), h.percentile(0.5), h.percentile(0.95), h.percentile(0.99), h.max()});
  }
  rep.queues.push_back(QueueRow{"all switches", switches.count(), switches.percentile(0.5), switches.percentile(0.95),
                                switches.percentile(0.99), switches.max()});

  const double seconds = net.now().seconds_f();
  const double window = net.traffic_window().seconds_f();
  rep.links.resize(classes.size());
  for (size_t c = 0; c < classes.size(); ++c) rep.links[c].link_class = classes[c];
  for (size_t p = 0; p < net.port_count(); ++p) {
    const Port& port = net.port(p);
    LinkRow& r = rep.links[port.link_class];
    const double util = window > 0 ? double(port.window_tx_bytes) * 8 / (port.rate.bps() * window) : 0;
    r.mean_util += util;
    r.max_util = std::max(r.max_util, util);
    ++r.ports;
    const double paused = net.paused_time(p).us_f();
    r.paused_us += paused;
    rep.paused_us += paused;
  }
  for (LinkRow& r : rep.links)
    if (r.ports) r.mean_util /= double(r.ports);
  rep.sim_seconds = seconds;
  rep.events = net.events();
  return rep;
}

std::string slowdown_csv(const std::vector<Report>& reports) {
  std::string out = "cc,bucket,lo_bytes,hi_bytes,flows,p50,p95,p99,mean\n";
  char buf[256];
  for (const Report& r : reports)
    for (const SlowdownRow& s : r.slowdown) {
      std::snprintf(buf, sizeof buf, "%s,%s,%llu,%s,%zu,%.4f,%.4f,%.4f,%.4f\n", r.cc.c_str(), s.label.c_str(),
                    static_cast<unsigned long long>(s.lo),
                    s.hi == UINT64_MAX ? "" : std::to_string(s.hi).c_str(), s.flows, s.p50, s.p95, s.p99, s.mean);
      out += buf;
    }
  return out;
}

std::string summary_csv(const std::vector<Report>& reports) {
  std::string out =
      "scenario,cc,seed,flows,finished,slowdown_p50,slowdown_p95,slowdown_p99,data_drops,pause_frames,paused_us,"
      "queue_p99_bytes,queue_max_bytes,ecn_marks,cnps,nacks,timeouts,retransmitted_bytes,last_finish_us,"
      "sim_s,wall_s,events,events_per_s,peak_rss_kb\n";
  char buf[512];
  for (const Report& r : reports) {
    const SlowdownRow& all = r.slowdown.back();
    const QueueRow& q = r.queues.back();
    const Counters& c = r.counters;
    std::snprintf(buf, sizeof buf,
                  "%s,%s,%llu,%zu,%zu,%.4f,%.4f,%.4f,%llu,%llu,%.3f,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%.3f,%.6f,%.3f,%llu,%.0f,%llu\n",
                  r.scenario.c_str(), r.cc.c_str(), static_cast<unsigned long long>(r.seed), r.flows, r.finished,
                  all.p50, all.p95, all.p99, static_cast<unsigned long long>(c.data_packets_dropped),
                  static_cast<unsigned long long>(c.pause_frames), r.paused_us, static_cast<unsigned long long>(q.p99),
                  static_cast<unsigned long long>(q.max), static_cast<unsigned long long>(c.ecn_marks),
                  static_cast<unsigned long long>(c.cnps), static_cast<unsigned long long>(c.nacks),
                  static_cast<unsigned long long>(c.timeouts), static_cast<unsigned long long>(c.retransmitted_bytes),
                  r.last_finish_us, r.sim_seconds, r.wall_seconds, static_cast<unsigned long long>(r.events),
                  r.events_per_second, static_cast<unsigned long long>(r.peak_rss_kb));
    out += buf;
  }
  return out;
}

std::string reports_json(const std::vector<Report>& reports) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const Report& r : reports) {
    nlohmann::ordered_json j;
    j["scenario"] = r.scenario;
    j["cc"] = r.cc;
    j["seed"] = r.seed;
    j["flows"] = r.flows;
    j["finished"] = r.finished;
    for (const SlowdownRow& s : r.slowdown) {
      nlohmann::ordered_json b;
      b["bucket"] = s.label;
      b["lo_bytes"] = s.lo;
      if (s.hi != UINT64_MAX) b["hi_bytes"] = s.hi;
      b["flows"] = s.flows;
      b["p50"] = s.p50, b["p95"] = s.p95, b["p99"] = s.p99, b["mean"] = s.mean;
      j["slowdown"].push_back(b);
    }
    const Counters& c = r.counters;
    j["drops"] = {{"data_packets", c.data_packets_dropped}, {"data_bytes", c.data_wire_bytes_dropped},
                  {"control_packets", c.control_packets_dropped}};
    j["pfc"] = {{"pause_frames", c.pause_frames}, {"resume_frames", c.resume_frames}, {"paused_us", r.paused_us}};
    j["bytes"] = {{"data_sent", c.data_wire_bytes_sent}, {"data_delivered", c.data_wire_bytes_delivered},
                  {"payload_sent", c.payload_bytes_sent}, {"retransmitted", c.retransmitted_bytes}};
    j["packets"] = {{"data_sent", c.data_packets_sent}, {"data_delivered", c.data_packets_delivered}};
    j["signals"] = {{"ecn_marks", c.ecn_marks}, {"cnps", c.cnps}, {"acks", c.acks}, {"nacks", c.nacks},
                    {"timeouts", c.timeouts}};
    j["faults"] = {{"lost_on_links", c.lost_on_links}, {"reroutes", c.reroutes}};
    for (const QueueRow& q : r.queues)
      j["queues"].push_back({{"link_class", q.link_class}, {"samples", q.samples}, {"p50_bytes", q.p50},
                             {"p95_bytes", q.p95}, {"p99_bytes", q.p99}, {"max_bytes", q.max}});
    for (const LinkRow& l : r.links)
      j["links"].push_back({{"link_class", l.link_class}, {"ports", l.ports}, {"mean_util", l.mean_util},
                            {"max_util", l.max_util}, {"paused_us", l.paused_us}});
    for (const CollectiveResult& k : r.collectives)
      j["collectives"].push_back({{"name", k.name}, {"op", k.op}, {"algorithm", k.algorithm}, {"ranks", k.ranks},
                                  {"bytes", k.bytes}, {"flows", k.flows}, {"finished", k.finished},
                                  {"start_us", k.start_us}, {"end_us", k.end_us}, {"time_us", k.time_us},
                                  {"algbw_gbs", k.algbw_gbs}, {"busbw_gbs", k.busbw_gbs}});
    j["last_finish_us"] = r.last_finish_us;
    j["speed"] = {{"sim_seconds", r.sim_seconds}, {"wall_seconds", r.wall_seconds}, {"events", r.events},
                  {"events_per_second", r.events_per_second}, {"peak_rss_kb", r.peak_rss_kb}};
    out.push_back(j);
  }
  return out.dump(2) + "\n";
}

std::string reports_text(const std::vector<Report>& reports) {
  if (reports.empty()) return "";
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%-12s", "FCT slowdown");
  out += buf;
  for (const Report& r : reports) {
    std::snprintf(buf, sizeof buf, " | %-17s", r.cc.c_str());
    out += buf;
  }
  out += "\n";
  std::snprintf(buf, sizeof buf, "%-12s", "size");
  out += buf;
  for (size_t i = 0; i < reports.size(); ++i) out += " |   p50   p99 flows";
  out += "\n";
  for (size_t b = 0; b < reports[0].slowdown.size(); ++b) {
    std::snprintf(buf, sizeof buf, "%-12s", reports[0].slowdown[b].label.c_str());
    out += buf;
    for (const Report& r : reports) {
      const SlowdownRow& s = r.slowdown[b];
      std::snprintf(buf, sizeof buf, " | %5.2f %5.1f %5zu", s.p50, s.p99, s.flows);
      out += buf;
    }
    out += "\n";
  }
  out += "\n";
  for (const Report& r : reports) {
    const Counters& c = r.counters;
    std::snprintf(buf, sizeof buf,
                  "%-14s flows %zu/%zu  drops %llu  PFC pauses %llu (%.1f us paused)  queue p99 %s  "
                  "%.2f ms simulated in %.1f s (%.1f M events/s)\n",
                  r.cc.c_str(), r.finished, r.flows, static_cast<unsigned long long>(c.data_packets_dropped),
                  static_cast<unsigned long long>(c.pause_frames), r.paused_us,
                  size_label(r.queues.back().p99).c_str(), r.sim_seconds * 1e3, r.wall_seconds,
                  r.events_per_second / 1e6);
    out += buf;
    if (c.reroutes > 0 || c.lost_on_links > 0) {
      std::snprintf(buf, sizeof buf, "%-14s link events: %llu frames lost on links, %llu reroutes, %llu NACKs, %llu timeouts\n", "",
                    static_cast<unsigned long long>(c.lost_on_links), static_cast<unsigned long long>(c.reroutes),
                    static_cast<unsigned long long>(c.nacks), static_cast<unsigned long long>(c.timeouts));
      out += buf;
    }
  }
  bool collectives = false;
  for (const Report& r : reports) collectives |= !r.collectives.empty();
  if (collectives) out += "\ncollectives (time from the first flow's start to the last byte; nccl-tests' algbw and busbw)\n";
  for (const Report& r : reports) out += collectives_text(r.collectives, r.cc);
  return out;
}

}  // namespace xm::sim
