#include "sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include "sim/random.h"
#include "sim/workload/cdf.h"
#include "sim/workload/hpcc_config.h"
#include "sim/workload/hpcc_io.h"
#include "sim/yaml_reader.h"
#include "topo/spec_io.h"

namespace xm::sim {
namespace {

void read_network(const Reader& r, const YAML::Node& n, NetConfig& c) {
  r.keys(n, "network",
         {"mtu", "pfc", "ecn", "buffer_mb", "load_balancing", "ack_every", "kmin_kb_per_25g", "kmax_kb_per_25g", "pmax",
          "headroom_rtts", "pfc_shift", "egress_shift", "reserve_bytes", "resume_offset_bytes", "rto_us",
          "cnp_interval_us", "nack_interval_us", "header_bytes", "wire_gap_bytes", "model", "headroom_packets",
          "ack_high_prio", "nic_arbitration", "token_round_bytes", "reroute_delay_us"});
  auto f = [](const char* k) { return std::string("network.") + k; };
  if (n["model"]) {  // first: the fields below override the model's
    const std::string m = r.text(n["model"], f("model"));
    if (m == "xm") apply_model(c, NetModel::kXm);
    else if (m == "hpcc") apply_model(c, NetModel::kHpcc);
    else r.fail(n["model"], f("model"), "expected xm or hpcc, got \"" + m + "\"");
  }
  if (n["mtu"]) c.mtu_payload = uint32_t(r.whole(n["mtu"], f("mtu"), 64, 9000));
  if (n["pfc"]) c.pfc = r.boolean(n["pfc"], f("pfc"));
  if (n["ecn"]) c.ecn = r.boolean(n["ecn"], f("ecn"));
  if (n["buffer_mb"]) c.buffer_mb = r.number(n["buffer_mb"], f("buffer_mb"), 0.01, 65536);
  if (n["load_balancing"]) {
    const std::string lb = r.text(n["load_balancing"], f("load_balancing"));
    if (lb == "ecmp") c.load_balancing = LoadBalancing::kEcmp;
    else if (lb == "spray") c.load_balancing = LoadBalancing::kSpray;
    else r.fail(n["load_balancing"], f("load_balancing"), "expected ecmp or spray, got \"" + lb + "\"");
  }
  if (n["ack_every"]) c.ack_every = uint32_t(r.whole(n["ack_every"], f("ack_every"), 1, 1024));
  if (n["kmin_kb_per_25g"]) c.ecn_thresholds.kmin_kb_per_25g = r.number(n["kmin_kb_per_25g"], f("kmin_kb_per_25g"), 0, 1e6);
  if (n["kmax_kb_per_25g"]) c.ecn_thresholds.kmax_kb_per_25g = r.number(n["kmax_kb_per_25g"], f("kmax_kb_per_25g"), 0, 1e6);
  if (c.ecn_thresholds.kmax_kb_per_25g <= c.ecn_thresholds.kmin_kb_per_25g)
    r.fail(n, "network.kmax_kb_per_25g", "must be larger than kmin_kb_per_25g");
  if (n["pmax"]) c.ecn_thresholds.pmax = r.number(n["pmax"], f("pmax"), 0, 1);
  if (n["headroom_rtts"]) c.headroom_rtts = r.number(n["headroom_rtts"], f("headroom_rtts"), 0, 100);
  if (n["pfc_shift"]) c.pfc_shift = uint32_t(r.whole(n["pfc_shift"], f("pfc_shift"), 0, 16));
  if (n["egress_shift"]) c.egress_shift = uint32_t(r.whole(n["egress_shift"], f("egress_shift"), 0, 16));
  if (n["reserve_bytes"]) c.reserve_bytes = uint32_t(r.whole(n["reserve_bytes"], f("reserve_bytes"), 0, 1 << 24));
  if (n["resume_offset_bytes"]) c.resume_offset_bytes = uint32_t(r.whole(n["resume_offset_bytes"], f("resume_offset_bytes"), 0, 1 << 24));
  if (n["rto_us"]) c.rto = Time::us(r.number(n["rto_us"], f("rto_us"), 1, 1e7));
  if (n["cnp_interval_us"]) c.cnp_interval = Time::us(r.number(n["cnp_interval_us"], f("cnp_interval_us"), 0, 1e6));
  if (n["nack_interval_us"]) c.nack_interval = Time::us(r.number(n["nack_interval_us"], f("nack_interval_us"), 0, 1e6));
  if (n["header_bytes"]) c.header_bytes = uint32_t(r.whole(n["header_bytes"], f("header_bytes"), 0, 1024));
  if (n["wire_gap_bytes"]) c.wire_gap_bytes = uint32_t(r.whole(n["wire_gap_bytes"], f("wire_gap_bytes"), 0, 1024));
  if (n["headroom_packets"]) c.headroom_packets = r.number(n["headroom_packets"], f("headroom_packets"), 0, 1000);
  if (n["ack_high_prio"]) c.ack_high_prio = c.nic_ack_high_prio = r.boolean(n["ack_high_prio"], f("ack_high_prio"));
  if (n["nic_arbitration"]) {
    const std::string a = r.text(n["nic_arbitration"], f("nic_arbitration"));
    if (a == "pacing") c.nic_arbitration = NicArbitration::kPacing;
    else if (a == "token_rounds") c.nic_arbitration = NicArbitration::kTokenRounds;
    else r.fail(n["nic_arbitration"], f("nic_arbitration"), "expected pacing or token_rounds, got \"" + a + "\"");
  }
  if (n["reroute_delay_us"]) c.reroute_delay = Time::us(r.number(n["reroute_delay_us"], f("reroute_delay_us"), 0, 1e9));
  if (n["token_round_bytes"]) c.token_round_bytes = uint32_t(r.whole(n["token_round_bytes"], f("token_round_bytes"), 64, 1 << 20));
}

// A collective: what xccl would run, replayed (sim/collective/collective.h). `earlier`:
// the names of the collectives before it, which `after` may name.
CollectiveOptions read_collective(const Reader& r, const YAML::Node& n, const std::string& at,
                                  const std::vector<std::string>& earlier) {
  auto f = [&](const char* k) { return at + "." + k; };
  r.keys(n, at, {"name", "op", "bytes", "type", "algorithm", "chunk_bytes", "ranks", "rails", "start_us", "after"});
  CollectiveOptions c;
  c.name = n["name"] ? r.text(n["name"], f("name")) : "collective" + std::to_string(earlier.size());
  if (std::count(earlier.begin(), earlier.end(), c.name)) r.fail(n["name"], f("name"), "\"" + c.name + "\" is taken");
  const std::vector<sched::Collective> ops = {sched::Collective::kAllReduce, sched::Collective::kAllGather,
                                              sched::Collective::kReduceScatter, sched::Collective::kAllToAll,
                                              sched::Collective::kBroadcast, sched::Collective::kReduce};
  if (!n["op"]) r.fail(n, f("op"), "required: all_reduce, all_gather, reduce_scatter, alltoall, broadcast or reduce");
  const std::string op = r.text(n["op"], f("op"));
  auto known = std::find_if(ops.begin(), ops.end(), [&](sched::Collective o) { return op == sched::to_string(o); });
  if (known == ops.end())
    r.fail(n["op"], f("op"), "expected all_reduce, all_gather, reduce_scatter, alltoall, broadcast or reduce, got \"" + op + "\"");
  c.op = *known;
  if (n["bytes"]) c.bytes = r.size(n["bytes"], f("bytes"), 1, uint64_t(1) << 40);
  if (n["type"]) {
    const std::string type = r.text(n["type"], f("type"));
    int k = 0;
    while (k < sched::kDataTypes && type != sched::to_string(sched::DataType(k))) ++k;
    if (k == sched::kDataTypes)
      r.fail(n["type"], f("type"), "expected int8, uint8, int32, int64, half, bfloat16, float or double, got \"" + type + "\"");
    c.type = sched::DataType(k);
  }
  if (n["algorithm"] && r.text(n["algorithm"], f("algorithm")) != "auto") {
    const std::string name = n["algorithm"].Scalar();
    Result<sched::AlgorithmOverrides> o = sched::parse_algorithm_overrides(op + ":" + name);
    if (!o) {
      std::string why = o.error().message;
      why = why.substr(why.find(": ") + 2);  // the XCCL_ALGO prefix is the runtime's
      r.fail(n["algorithm"], f("algorithm"), why + " (or auto)");
    }
    c.algorithm = o->for_collective(c.op);
  }
  if (n["chunk_bytes"] && !(n["chunk_bytes"].IsScalar() && n["chunk_bytes"].Scalar() == "auto"))
    c.chunk_bytes = r.size(n["chunk_bytes"], f("chunk_bytes"), 4096, uint64_t(1) << 30);
  if (const YAML::Node ranks = n["ranks"]) {
    const std::string at_ranks = f("ranks");
    r.keys(ranks, at_ranks, {"servers", "first_server", "server_stride", "per_server", "first_local"});
    auto g = [&](const char* k) { return at_ranks + "." + k; };
    if (ranks["servers"]) c.servers = uint32_t(r.whole(ranks["servers"], g("servers"), 1, 1 << 24));
    if (ranks["first_server"]) c.first_server = uint32_t(r.whole(ranks["first_server"], g("first_server"), 0, 1 << 24));
    if (ranks["server_stride"]) c.server_stride = uint32_t(r.whole(ranks["server_stride"], g("server_stride"), 1, 1 << 24));
    if (ranks["per_server"]) c.per_server = uint32_t(r.whole(ranks["per_server"], g("per_server"), 1, 1 << 16));
    if (ranks["first_local"]) c.first_local = uint32_t(r.whole(ranks["first_local"], g("first_local"), 0, 1 << 16));
  }
  if (const YAML::Node rails = n["rails"]) {
    if (rails.IsSequence()) {
      if (rails.size() == 0) r.fail(rails, f("rails"), "name at least one rail (or own, or all)");
      for (size_t i = 0; i < rails.size(); ++i) {
        const std::string at_rail = at + ".rails[" + std::to_string(i) + "]";
        c.rails.push_back(uint32_t(r.whole(rails[i], at_rail, 0, 1 << 16)));
        if (std::count(c.rails.begin(), c.rails.end(), c.rails.back()) > 1) r.fail(rails[i], at_rail, "given twice");
      }
    } else {
      const std::string use = r.text(rails, f("rails"));
      if (use == "all") c.all_rails = true;
      else if (use != "own") r.fail(rails, f("rails"), "expected own, all or a list of rails, got \"" + use + "\"");
    }
  }
  if (n["start_us"]) c.start = Time::us(r.number(n["start_us"], f("start_us"), 0, 1e9));
  if (const YAML::Node after = n["after"]) {
    std::vector<YAML::Node> names;
    if (after.IsSequence())
      for (size_t i = 0; i < after.size(); ++i) names.push_back(after[i]);
    else
      names.push_back(after);
    for (const YAML::Node& a : names) {
      const std::string name = r.text(a, f("after"));
      if (!std::count(earlier.begin(), earlier.end(), name))
        r.fail(a, f("after"), "\"" + name + "\" names no collective listed before this one");
      c.after.push_back(name);
    }
  }
  return c;
}

TrafficSpec read_traffic(const Reader& r, const YAML::Node& item, const std::string& path, const std::string& dir,
                         const std::vector<std::string>& collectives) {
  if (!item.IsMap() || item.size() != 1)
    r.fail(item, path, "expected one of poisson, incast, permutation, allreduce, collective, hpcc_flows with its settings");
  const std::string kind = item.begin()->first.as<std::string>();
  const YAML::Node n = item.begin()->second;
  const std::string at = path + "." + kind;
  auto f = [&](const char* k) { return at + "." + k; };
  TrafficSpec t;
  if (kind == "poisson") {
    t.kind = TrafficSpec::Kind::kPoisson;
    r.keys(n, at, {"cdf", "load", "duration_ms", "start_ms", "same_rail"});
    if (!n["cdf"]) r.fail(n, f("cdf"), "required: a flow-size distribution file");
    if (!n["load"]) r.fail(n, f("load"), "required: the offered load, a fraction of host line rate");
    t.path = resolve_path(dir, r.text(n["cdf"], f("cdf")));
    t.poisson.load = r.number(n["load"], f("load"), 1e-6, 1);
    if (n["duration_ms"]) t.poisson.duration = Time::ms(r.number(n["duration_ms"], f("duration_ms"), 1e-6, 1e6));
    if (n["start_ms"]) t.poisson.start = Time::ms(r.number(n["start_ms"], f("start_ms"), 0, 1e6));
    if (n["same_rail"]) t.poisson.same_rail = r.boolean(n["same_rail"], f("same_rail"));
  } else if (kind == "incast") {
    t.kind = TrafficSpec::Kind::kIncast;
    r.keys(n, at, {"receiver", "senders", "bytes", "start_us", "rounds", "interval_us"});
    if (n["receiver"]) t.incast.receiver = uint32_t(r.whole(n["receiver"], f("receiver"), 0, UINT32_MAX));
    if (n["senders"]) t.incast.senders = uint32_t(r.whole(n["senders"], f("senders"), 1, UINT32_MAX));
    if (n["bytes"]) t.incast.bytes = r.whole(n["bytes"], f("bytes"), 1, uint64_t(1) << 40);
    if (n["start_us"]) t.incast.start = Time::us(r.number(n["start_us"], f("start_us"), 0, 1e9));
    if (n["rounds"]) t.incast.rounds = uint32_t(r.whole(n["rounds"], f("rounds"), 1, 1'000'000));
    if (n["interval_us"]) t.incast.interval = Time::us(r.number(n["interval_us"], f("interval_us"), 0, 1e9));
  } else if (kind == "permutation") {
    t.kind = TrafficSpec::Kind::kPermutation;
    r.keys(n, at, {"bytes", "start_us"});
    if (n["bytes"]) t.permutation.bytes = r.whole(n["bytes"], f("bytes"), 1, uint64_t(1) << 40);
    if (n["start_us"]) t.permutation.start = Time::us(r.number(n["start_us"], f("start_us"), 0, 1e9));
  } else if (kind == "allreduce") {
    t.kind = TrafficSpec::Kind::kAllReduce;
    r.keys(n, at, {"bytes", "start_us"});
    if (n["bytes"]) t.allreduce.bytes = r.whole(n["bytes"], f("bytes"), 1, uint64_t(1) << 40);
    if (n["start_us"]) t.allreduce.start = Time::us(r.number(n["start_us"], f("start_us"), 0, 1e9));
  } else if (kind == "collective") {
    t.kind = TrafficSpec::Kind::kCollective;
    t.collective = read_collective(r, n, at, collectives);
  } else if (kind == "hpcc_flows") {
    t.kind = TrafficSpec::Kind::kHpccFlows;
    t.path = resolve_path(dir, r.text(n, at));
  } else {
    r.fail(item.begin()->first, path + "." + kind,
           "unknown traffic; expected poisson, incast, permutation, allreduce, collective or hpcc_flows");
  }
  return t;
}

// {at_us, link: [a, b], set: down|up|drain|restore} or {..., rate_gbps: x} or {..., loss: p}.
LinkEventSpec read_link_event(const Reader& r, const YAML::Node& n, size_t i, const std::string& source) {
  const std::string at = "events[" + std::to_string(i) + "]";
  auto f = [&](const char* k) { return at + "." + k; };
  if (!n.IsMap()) r.fail(n, at, "expected {at_us, link: [a, b], set: down|up|drain|restore} (or rate_gbps, loss)");
  r.keys(n, at, {"at_us", "link", "set", "rate_gbps", "loss"});
  LinkEventSpec e;
  if (!n["at_us"]) r.fail(n, f("at_us"), "required");
  e.event.at = Time::us(r.number(n["at_us"], f("at_us"), 0, 1e10));
  const YAML::Node link = n["link"];
  if (!link || !link.IsSequence() || link.size() != 2)
    r.fail(link ? link : n, f("link"), "expected [a, b]: the names of the link's two ends");
  e.a = r.text(link[0], f("link"));
  e.b = r.text(link[1], f("link"));
  if (const size_t hash = e.b.find('#'); hash != std::string::npos) {
    const std::string index = e.b.substr(hash + 1);
    if (index.empty() || index.find_first_not_of("0123456789") != std::string::npos)
      r.fail(link[1], f("link"), "expected \"<name>#<n>\" for the n-th of parallel links, got \"" + e.b + "\"");
    e.parallel = uint32_t(std::stoul(index));
    e.b.resize(hash);
  }
  e.where = source + ":" + std::to_string(link.Mark().line + 1) + ":" + std::to_string(link.Mark().column + 1) + ": " + f("link") + ": ";
  const int given = bool(n["set"]) + bool(n["rate_gbps"]) + bool(n["loss"]);
  if (given != 1) r.fail(n, at, "give exactly one of set, rate_gbps and loss");
  if (n["set"]) {
    const std::string what = r.text(n["set"], f("set"));
    if (what == "down") e.event.kind = LinkEvent::Kind::kDown;
    else if (what == "up") e.event.kind = LinkEvent::Kind::kUp;
    else if (what == "drain") e.event.kind = LinkEvent::Kind::kDrain;
    else if (what == "restore") e.event.kind = LinkEvent::Kind::kRestore;
    else r.fail(n["set"], f("set"), "expected down, up, drain or restore, got \"" + what + "\"");
  } else if (n["rate_gbps"]) {
    e.event.kind = LinkEvent::Kind::kRate;
    e.event.rate = Rate::gbps(r.number(n["rate_gbps"], f("rate_gbps"), 1e-3, 1e6));
  } else {
    e.event.kind = LinkEvent::Kind::kLoss;
    e.event.loss = r.number(n["loss"], f("loss"), 0, 1);
  }
  return e;
}

}  // namespace

Scenario hpcc_scenario(const HpccExperiment& e, const std::string& source, uint64_t seed) {
  Scenario s;
  s.name = std::filesystem::path(source).stem().string();
  s.source = source;
  s.seed = seed;
  s.hpcc_topology = e.topology_file;
  s.network = e.network;
  s.cc = {e.cc};
  TrafficSpec flows;
  flows.kind = TrafficSpec::Kind::kHpccFlows;
  flows.path = e.flow_file;
  s.traffic = {flows};
  // It runs until nothing is left to happen; a stop time only bounds a run that never ends.
  s.stop = e.stop == Time::infinite() ? Time::seconds(1000) : e.stop;
  return s;
}

Result<std::vector<LinkEvent>> scenario_link_events(const Scenario& s, const SimTopology& t) {
  std::vector<LinkEvent> out;
  for (const LinkEventSpec& spec : s.events) {
    auto node = [&](const std::string& name) {
      auto it = std::find(t.names.begin(), t.names.end(), name);
      return it == t.names.end() ? UINT32_MAX : uint32_t(it - t.names.begin());
    };
    const uint32_t a = node(spec.a), b = node(spec.b);
    if (a == UINT32_MAX || b == UINT32_MAX)
      return Error{spec.where + "no node named \"" + (a == UINT32_MAX ? spec.a : spec.b) + "\" (names as `xm topo show` prints them)"};
    uint32_t seen = 0, found = UINT32_MAX;
    for (uint32_t l = 0; l < t.links.size() && found == UINT32_MAX; ++l)
      if ((t.links[l].a == a && t.links[l].b == b) || (t.links[l].a == b && t.links[l].b == a))
        if (seen++ == spec.parallel) found = l;
    if (found == UINT32_MAX)
      return Error{spec.where + (seen == 0 ? "no link between " + spec.a + " and " + spec.b
                                           : "only " + std::to_string(seen) + " links between " + spec.a + " and " + spec.b)};
    LinkEvent e = spec.event;
    e.link = found;
    out.push_back(e);
  }
  return out;
}

Result<Scenario> parse_scenario(std::string_view text, const std::string& source) {
  Scenario s;
  s.source = source;
  s.buckets = {};
  const std::string dir = std::filesystem::path(source).parent_path().string();
  Status read = read_yaml(text, source, [&](const Reader& r, const YAML::Node& root) {
    if (!root.IsMap()) r.fail(root, "", "a scenario is a mapping (name, topology, traffic, ...)");
    r.keys(root, "", {"name", "seed", "topology", "network", "cc", "traffic", "events", "stop_ms", "buckets"});
    s.name = root["name"] ? r.text(root["name"], "name") : std::filesystem::path(source).stem().string();
    if (root["seed"]) s.seed = r.whole(root["seed"], "seed", 0, UINT64_MAX);
    if (!root["topology"]) r.fail(root, "topology", "required: {spec: <cluster spec>} or {hpcc: <topology file>}");
    const YAML::Node topo = root["topology"];
    r.keys(topo, "topology", {"spec", "hpcc"});
    if (bool(topo["spec"]) == bool(topo["hpcc"])) r.fail(topo, "topology", "give exactly one of spec and hpcc");
    if (topo["spec"]) s.spec_path = resolve_path(dir, r.text(topo["spec"], "topology.spec"));
    if (topo["hpcc"]) s.hpcc_topology = resolve_path(dir, r.text(topo["hpcc"], "topology.hpcc"));
    if (root["network"]) read_network(r, root["network"], s.network);
    if (root["cc"]) {
      s.cc.clear();
      const YAML::Node cc = root["cc"];
      if (cc.IsScalar()) s.cc.push_back(cc.Scalar());
      else if (cc.IsSequence())
        for (size_t i = 0; i < cc.size(); ++i) s.cc.push_back(r.text(cc[i], "cc[" + std::to_string(i) + "]"));
      else r.fail(cc, "cc", "expected an algorithm name or a list of them");
      if (s.cc.empty()) r.fail(cc, "cc", "name at least one algorithm");
    }
    if (!root["traffic"] || !root["traffic"].IsSequence() || root["traffic"].size() == 0)
      r.fail(root["traffic"] ? root["traffic"] : root, "traffic", "required: a list of traffic sources");
    std::vector<std::string> collectives;
    for (size_t i = 0; i < root["traffic"].size(); ++i) {
      s.traffic.push_back(read_traffic(r, root["traffic"][i], "traffic[" + std::to_string(i) + "]", dir, collectives));
      if (s.traffic.back().kind == TrafficSpec::Kind::kCollective) collectives.push_back(s.traffic.back().collective.name);
    }
    if (const YAML::Node events = root["events"]) {
      if (!events.IsSequence()) r.fail(events, "events", "expected a list of link events");
      for (size_t i = 0; i < events.size(); ++i) s.events.push_back(read_link_event(r, events[i], i, source));
    }
    if (root["stop_ms"]) s.stop = Time::ms(r.number(root["stop_ms"], "stop_ms", 1e-6, 1e7));
    if (root["buckets"]) {
      const YAML::Node b = root["buckets"];
      if (!b.IsSequence() || b.size() == 0) r.fail(b, "buckets", "expected a list of flow sizes in bytes");
      for (size_t i = 0; i < b.size(); ++i) {
        s.buckets.push_back(r.whole(b[i], "buckets[" + std::to_string(i) + "]", 1, UINT64_MAX));
        if (i > 0 && s.buckets[i] <= s.buckets[i - 1]) r.fail(b[i], "buckets[" + std::to_string(i) + "]", "sizes must ascend");
      }
    }
  });
  if (!read) return Error{read.message()};
  return s;
}

Result<Scenario> load_scenario(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error{path + ": cannot open"};
  std::stringstream text;
  text << in.rdbuf();
  return parse_scenario(text.str(), path);
}

Result<SimTopology> scenario_topology(const Scenario& s) {
  if (!s.hpcc_topology.empty()) return load_hpcc_topology(s.hpcc_topology);
  Result<topo::ClusterSpec> spec = topo::load_spec(s.spec_path);
  if (!spec) return Error{spec.error().message};
  Result<topo::Fabric> fabric = topo::build_fabric(*spec);
  if (!fabric) return Error{s.spec_path + ": " + fabric.error().message};
  const bool collectives = std::any_of(s.traffic.begin(), s.traffic.end(),
                                       [](const TrafficSpec& t) { return t.kind == TrafficSpec::Kind::kCollective; });
  return topology_from_fabric(*fabric, collectives);
}

Result<Traffic> scenario_flows(const Scenario& s, const SimTopology& topology) {
  Traffic traffic;
  std::vector<FlowSpec>& flows = traffic.flows;
  for (size_t i = 0; i < s.traffic.size(); ++i) {
    const TrafficSpec& t = s.traffic[i];
    // Each source draws from its own stream, so adding a source leaves the others alone.
    Random rng(mix64(s.seed) ^ mix64(i + 1));
    Result<std::vector<FlowSpec>> more = Error{""};
    switch (t.kind) {
      case TrafficSpec::Kind::kPoisson: {
        Result<FlowSizeCdf> cdf = FlowSizeCdf::load(t.path);
        if (!cdf) return Error{cdf.error().message};
        more = poisson_flows(topology, *cdf, t.poisson, rng);
        break;
      }
      case TrafficSpec::Kind::kIncast: more = incast_flows(topology, t.incast, rng); break;
      case TrafficSpec::Kind::kPermutation: more = permutation_flows(topology, t.permutation, rng); break;
      case TrafficSpec::Kind::kAllReduce:
        more = ring_allreduce_flows(topology, t.allreduce, uint32_t(flows.size()));
        break;
      case TrafficSpec::Kind::kHpccFlows: more = load_hpcc_flows(t.path, topology); break;
      case TrafficSpec::Kind::kCollective: {
        std::vector<uint32_t> wait_for;
        for (const std::string& name : t.collective.after)
          for (const CollectiveReplay& c : traffic.collectives)
            if (c.options.name == name) wait_for.insert(wait_for.end(), c.last_flows.begin(), c.last_flows.end());
        Result<CollectiveReplay> replay = replay_collective(t.collective, topology, wait_for, flows);
        if (!replay)
          return Error{s.source + ": traffic[" + std::to_string(i) + "].collective: " + replay.error().message};
        traffic.collectives.push_back(std::move(replay).value());
        continue;
      }
    }
    if (!more) return Error{s.source + ": traffic[" + std::to_string(i) + "]: " + more.error().message};
    flows.insert(flows.end(), more->begin(), more->end());
  }
  return traffic;
}

}  // namespace xm::sim
