#include "sim/workload/hpcc_io.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "sim/network.h"

namespace xm::sim {
namespace {

// Non-blank lines with their numbers, split into whitespace-separated fields.
struct Line {
  int number = 0;
  std::vector<std::string> fields;
};

std::vector<Line> split_lines(std::string_view text) {
  std::vector<Line> lines;
  int number = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    ++number;
    std::istringstream in{std::string(text.substr(pos, end - pos))};
    Line line{number, {}};
    for (std::string f; in >> f;) line.fields.push_back(f);
    if (!line.fields.empty()) lines.push_back(std::move(line));
    pos = end + 1;
  }
  return lines;
}

template <typename T>
bool parse_number(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, out);
  return ec == std::errc() && ptr == end;
}

bool parse_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  char* end = nullptr;
  out = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

std::string at(const std::string& source, int line, const char* field) {
  return source + ":" + std::to_string(line) + ": " + field + ": ";
}

std::string read_file(const std::string& path, bool& ok) {
  std::ifstream in(path);
  ok = bool(in);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

uint32_t hpcc_ip(uint32_t id) { return 0x0b000001u + ((id / 256) * 0x00010000u) + ((id % 256) * 0x00000100u); }

Result<Rate> parse_rate(std::string_view text) {
  std::string s(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  double v = 0;
  if (i == 0 || !parse_double(s.substr(0, i), v) || !(v > 0)) return Error{"expected a rate such as 100Gbps, got \"" + s + "\""};
  std::string unit = s.substr(i);
  double scale = 0;
  for (auto [name, k] : {std::pair{"Gbps", 1e9}, {"Gb/s", 1e9}, {"G", 1e9}, {"Mbps", 1e6}, {"Mb/s", 1e6},
                         {"M", 1e6}, {"Tbps", 1e12}, {"Tb/s", 1e12}, {"Kbps", 1e3}, {"bps", 1.0}})
    if (unit == name) scale = k;
  if (scale == 0) return Error{"unknown rate unit \"" + unit + "\" (Gbps, Mbps, Tbps)"};
  return Rate::bps(v * scale);
}

Result<Time> parse_duration(std::string_view text) {
  std::string s(text);
  size_t i = 0;
  while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
  double v = 0;
  if (i == 0 || !parse_double(s.substr(0, i), v)) return Error{"expected a time such as 1000ns, got \"" + s + "\""};
  std::string unit = s.substr(i);
  if (unit == "ps") return Time::ps(int64_t(v + 0.5));
  if (unit == "ns") return Time::ns(v);
  if (unit == "us") return Time::us(v);
  if (unit == "ms") return Time::ms(v);
  if (unit == "s") return Time::seconds(v);
  return Error{"unknown time unit \"" + unit + "\" (ps, ns, us, ms, s)"};
}

Result<SimTopology> parse_hpcc_topology(std::string_view text, const std::string& source) {
  const std::vector<Line> lines = split_lines(text);
  if (lines.empty()) return Error{source + ": empty topology file"};
  const Line& head = lines[0];
  uint32_t nodes = 0, switches = 0, links = 0;
  const std::vector<std::string>& h = head.fields;
  if (h.size() == 3) {
    if (!parse_number(h[0], nodes) || !parse_number(h[1], switches) || !parse_number(h[2], links))
      return Error{at(source, head.number, "header") + "expected \"<nodes> <switches> <links>\""};
  } else if (h.size() == 7) {  // SimAI's: nodes, GPUs per server, NVSwitches, switches, links, GPU type, GPUs per node
    uint32_t per_server = 0, nvswitches = 0;
    if (!parse_number(h[0], nodes) || !parse_number(h[1], per_server) || !parse_number(h[2], nvswitches) ||
        !parse_number(h[3], switches) || !parse_number(h[4], links))
      return Error{at(source, head.number, "header") +
                   "expected \"<nodes> <gpus per server> <nvswitches> <switches> <links> <gpu type> <gpus per node>\""};
    if (nvswitches != 0)
      return Error{at(source, head.number, "nvswitches") +
                   "NVSwitch nodes are not read from topology files; describe servers with a cluster spec"};
  } else {
    return Error{at(source, head.number, "header") +
                 "expected \"<nodes> <switches> <links>\" (HPCC) or \"<nodes> <gpus per server> <nvswitches> "
                 "<switches> <links> <gpu type> <gpus per node>\" (SimAI)"};
  }
  if (switches == 0 || switches >= nodes) return Error{at(source, head.number, "switches") + "must be 1 .. nodes - 1"};
  if (lines.size() < 2) return Error{source + ": missing the line of switch ids"};
  const Line& ids = lines[1];
  if (ids.fields.size() != switches)
    return Error{at(source, ids.number, "switch ids") + "expected " + std::to_string(switches) + " ids, got " +
                 std::to_string(ids.fields.size())};
  std::vector<char> is_switch(nodes, 0);
  for (const std::string& f : ids.fields) {
    uint32_t id = 0;
    if (!parse_number(f, id) || id >= nodes)
      return Error{at(source, ids.number, "switch ids") + "\"" + f + "\" is not a node id below " + std::to_string(nodes)};
    if (is_switch[id]) return Error{at(source, ids.number, "switch ids") + "node " + f + " listed twice"};
    is_switch[id] = 1;
  }
  if (lines.size() - 2 != links)
    return Error{source + ": header announces " + std::to_string(links) + " links, file has " +
                 std::to_string(lines.size() - 2)};
  SimTopology t;
  t.name = source;
  std::vector<uint32_t> index(nodes);
  for (int pass = 0; pass < 2; ++pass)
    for (uint32_t id = 0; id < nodes; ++id) {
      if (bool(is_switch[id]) != bool(pass)) continue;
      index[id] = t.node_count();
      t.external_id.push_back(id);
      t.tier.push_back(pass ? Tier::kOther : Tier::kHost);
      t.names.push_back((pass ? "sw" : "n") + std::to_string(id));
      if (!pass) t.server.push_back(id), t.rail.push_back(0);
    }
  t.hosts = nodes - switches;
  for (size_t i = 2; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (l.fields.size() != 5) return Error{at(source, l.number, "link") + "expected \"<a> <b> <rate> <delay> <error rate>\""};
    uint32_t a = 0, b = 0;
    if (!parse_number(l.fields[0], a) || a >= nodes) return Error{at(source, l.number, "a") + "not a node id"};
    if (!parse_number(l.fields[1], b) || b >= nodes) return Error{at(source, l.number, "b") + "not a node id"};
    Result<Rate> rate = parse_rate(l.fields[2]);
    if (!rate) return Error{at(source, l.number, "rate") + rate.error().message};
    Result<Time> delay = parse_duration(l.fields[3]);
    if (!delay) return Error{at(source, l.number, "delay") + delay.error().message};
    double error_rate = 0;
    if (!parse_double(l.fields[4], error_rate) || error_rate < 0 || error_rate > 1)
      return Error{at(source, l.number, "error rate") + "expected a number in [0, 1]"};
    if (error_rate > 0) return Error{at(source, l.number, "error rate") + "random link errors are not modelled; use 0"};
    t.links.push_back(SimLink{index[a], index[b], *rate, *delay});
  }
  // Tiers by distance from the hosts: 1 ToR, 2 aggregation, 3 core.
  std::vector<std::vector<uint32_t>> adj(t.node_count());
  for (const SimLink& l : t.links) adj[l.a].push_back(l.b), adj[l.b].push_back(l.a);
  std::vector<uint32_t> dist(t.node_count(), UINT32_MAX);
  std::queue<uint32_t> todo;
  for (uint32_t h = 0; h < t.hosts; ++h) dist[h] = 0, todo.push(h);
  while (!todo.empty()) {
    uint32_t u = todo.front();
    todo.pop();
    for (uint32_t v : adj[u])
      if (dist[v] == UINT32_MAX) dist[v] = dist[u] + 1, todo.push(v);
  }
  for (uint32_t s = t.hosts; s < t.node_count(); ++s)
    t.tier[s] = dist[s] == 1 ? Tier::kTor : dist[s] == 2 ? Tier::kAgg : dist[s] == 3 ? Tier::kCore : Tier::kOther;
  if (Status s = check_topology(t); !s) return Error{source + ": " + s.message()};
  return t;
}

Result<SimTopology> load_hpcc_topology(const std::string& path) {
  bool ok = false;
  std::string text = read_file(path, ok);
  if (!ok) return Error{path + ": cannot open"};
  return parse_hpcc_topology(text, path);
}

Result<std::vector<FlowSpec>> parse_hpcc_flows(std::string_view text, const std::string& source,
                                               const SimTopology& t) {
  const std::vector<Line> lines = split_lines(text);
  if (lines.empty()) return Error{source + ": empty flow file"};
  uint64_t count = 0;
  if (lines[0].fields.size() != 1 || !parse_number(lines[0].fields[0], count))
    return Error{at(source, lines[0].number, "count") + "expected the number of flows"};
  if (lines.size() - 1 != count)
    return Error{source + ": header announces " + std::to_string(count) + " flows, file has " +
                 std::to_string(lines.size() - 1)};
  std::unordered_map<uint32_t, uint32_t> host_of;
  for (uint32_t h = 0; h < t.hosts; ++h) host_of[t.external(h)] = h;
  std::vector<FlowSpec> flows;
  for (size_t i = 1; i < lines.size(); ++i) {
    const Line& l = lines[i];
    if (l.fields.size() != 6)
      return Error{at(source, l.number, "flow") + "expected \"<src> <dst> <priority group> <dst port> <bytes> <start s>\""};
    uint32_t src = 0, dst = 0, pg = 0, dport = 0;
    uint64_t bytes = 0;
    double start = 0;
    if (!parse_number(l.fields[0], src) || !host_of.count(src)) return Error{at(source, l.number, "src") + "\"" + l.fields[0] + "\" is not a host"};
    if (!parse_number(l.fields[1], dst) || !host_of.count(dst)) return Error{at(source, l.number, "dst") + "\"" + l.fields[1] + "\" is not a host"};
    if (src == dst) return Error{at(source, l.number, "dst") + "same as src"};
    if (!parse_number(l.fields[2], pg)) return Error{at(source, l.number, "priority group") + "expected an integer"};
    if (!parse_number(l.fields[3], dport) || dport > 65535) return Error{at(source, l.number, "dst port") + "expected 0..65535"};
    if (!parse_number(l.fields[4], bytes) || bytes == 0) return Error{at(source, l.number, "size") + "expected a positive integer"};
    if (!parse_double(l.fields[5], start) || start < 0) return Error{at(source, l.number, "start") + "expected seconds >= 0"};
    FlowSpec f;
    f.src = host_of[src], f.dst = host_of[dst], f.bytes = bytes, f.dport = uint16_t(dport);
    f.start = Time::seconds(start);
    flows.push_back(f);
  }
  return flows;
}

Result<std::vector<FlowSpec>> load_hpcc_flows(const std::string& path, const SimTopology& t) {
  bool ok = false;
  std::string text = read_file(path, ok);
  if (!ok) return Error{path + ": cannot open"};
  return parse_hpcc_flows(text, path, t);
}

namespace {
std::string rate_text(Rate r) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%gGbps", r.gbps());
  return buf;
}
}  // namespace

std::string format_hpcc_topology(const SimTopology& t, HpccDialect dialect) {
  const std::string switches = std::to_string(t.switch_count()), links = std::to_string(t.links.size());
  std::string out = std::to_string(t.node_count()) +
                    (dialect == HpccDialect::kSimai ? " 1 0 " + switches + " " + links + " NIC 1\n"
                                                    : " " + switches + " " + links + "\n");
  for (uint32_t s = t.hosts; s < t.node_count(); ++s) out += (s > t.hosts ? " " : "") + std::to_string(t.external(s));
  out += "\n";
  char buf[128];
  for (const SimLink& l : t.links) {
    std::snprintf(buf, sizeof buf, "%u %u %s %lldns 0.000000\n", t.external(l.a), t.external(l.b),
                  rate_text(l.rate).c_str(), static_cast<long long>(l.delay.ps() / 1000));
    out += buf;
  }
  return out;
}

std::string format_hpcc_flows(const std::vector<FlowSpec>& flows, const SimTopology& t) {
  std::string out = std::to_string(flows.size()) + "\n";
  char buf[128];
  for (const FlowSpec& f : flows) {
    std::snprintf(buf, sizeof buf, "%u %u 3 %u %llu %.9f\n", t.external(f.src), t.external(f.dst), unsigned(f.dport),
                  static_cast<unsigned long long>(f.bytes), f.start.seconds_f());
    out += buf;
  }
  return out;
}

std::string format_hpcc_fct(const Network& net) {
  const std::vector<Flow>& flows = net.flows();
  std::vector<uint32_t> done;
  for (uint32_t i = 0; i < flows.size(); ++i)
    if (flows[i].state == FlowState::kDone && flows[i].size > 0) done.push_back(i);  // barriers are no flows there
  std::stable_sort(done.begin(), done.end(), [&](uint32_t a, uint32_t b) { return flows[a].finish < flows[b].finish; });
  std::string out;
  char buf[160];
  const SimTopology& t = net.topology();
  for (uint32_t i : done) {
    const Flow& f = flows[i];
    std::snprintf(buf, sizeof buf, "%08x %08x %u %u %llu %lld %lld %lld\n", hpcc_ip(t.external(f.src)),
                  hpcc_ip(t.external(f.dst)), unsigned(f.sport), unsigned(f.dport),
                  static_cast<unsigned long long>(f.size), static_cast<long long>(f.start.ps() / 1000),
                  static_cast<long long>((f.finish - f.start).ps() / 1000), static_cast<long long>(f.ideal.ps() / 1000));
    out += buf;
  }
  return out;
}

}  // namespace xm::sim
