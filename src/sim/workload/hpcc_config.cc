#include "sim/workload/hpcc_config.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <vector>

#include "sim/workload/hpcc_io.h"
#include "util/file.h"
#include "util/format.h"

namespace xm::sim {
namespace {

// The HPCC code's keys and the ns3::Class::Attribute names SimAI's fork also reads.
const std::map<std::string, std::string>& aliases() {
  static const std::map<std::string, std::string> a = {
      {"ns3::QbbNetDevice::QcnEnabled", "ENABLE_QCN"},
      {"ns3::QbbNetDevice::DynamicThreshold", "USE_DYNAMIC_PFC_THRESHOLD"},
      {"ns3::QbbNetDevice::PauseTime", "PAUSE_TIME"},
      {"ns3::RdmaHw::CcMode", "CC_MODE"},
      {"ns3::RdmaHw::Mtu", "PACKET_PAYLOAD_SIZE"},
      {"ns3::RdmaHw::L2ChunkSize", "L2_CHUNK_SIZE"},
      {"ns3::RdmaHw::L2AckInterval", "L2_ACK_INTERVAL"},
      {"ns3::RdmaHw::L2BackToZero", "L2_BACK_TO_ZERO"},
      {"ns3::RdmaHw::RateAI", "RATE_AI"},
      {"ns3::RdmaHw::RateHAI", "RATE_HAI"},
      {"ns3::RdmaHw::MinRate", "MIN_RATE"},
      {"ns3::RdmaHw::VarWin", "VAR_WIN"},
      {"ns3::RdmaHw::RateBound", "RATE_BOUND"},
      {"ns3::RdmaHw::NACKGenerationInterval", "NACK_INTERVAL"},
      {"ns3::RdmaHw::TotalPauseTime", "NIC_TOTAL_PAUSE_TIME"},
      {"ns3::MellanoxDcqcn::AlphaResumInterval", "ALPHA_RESUME_INTERVAL"},
      {"ns3::MellanoxDcqcn::RPTimer", "RP_TIMER"},
      {"ns3::MellanoxDcqcn::EwmaGain", "EWMA_GAIN"},
      {"ns3::MellanoxDcqcn::RateDecreaseInterval", "RATE_DECREASE_INTERVAL"},
      {"ns3::MellanoxDcqcn::FastRecoveryTimes", "FAST_RECOVERY_TIMES"},
      {"ns3::MellanoxDcqcn::ClampTargetRate", "CLAMP_TARGET_RATE"},
      {"ns3::Hpcc::MiThresh", "MI_THRESH"},
      {"ns3::Hpcc::FastReact", "FAST_REACT"},
      {"ns3::Hpcc::MultiRate", "MULTI_RATE"},
      {"ns3::Hpcc::SampleFeedback", "SAMPLE_FEEDBACK"},
      {"ns3::Hpcc::TargetUtil", "U_TARGET"},
      {"ns3::SwitchNode::PfcEnabled", "PFC_ENABLED"},
      {"ns3::RdmaEgressQueue::TokenPerRound", "TOKEN_PER_ROUND"},
  };
  return a;
}

// Keys read and without effect here: outputs we do not write, monitors, traces, and the
// settings of algorithms and modes the file does not select.
bool without_effect(const std::string& key) {
  static const std::set<std::string> keys = {
      "PFC_OUTPUT_FILE", "SEND_OUTPUT_FILE", "TRACE_FILE", "TRACE_OUTPUT_FILE", "ENABLE_TRACE",
      "QLEN_MON_FILE", "QLEN_MON_START", "QLEN_MON_END", "BW_MON_FILE", "RATE_MON_FILE", "CNP_MON_FILE", "MON_START", "MON_END",
      "QP_MON_INTERVAL", "QLEN_MON_INTERVAL", "BW_MON_INTERVAL", "DATA_RATE", "LINK_DELAY",
      "PINT_LOG_BASE", "PINT_PROB", "DCTCP_RATE_AI", "NIC_TOTAL_PAUSE_TIME", "PAUSE_TIME",
      "INT_MULTI", "GLOBAL_T"};
  if (keys.count(key)) return true;
  for (const char* other : {"ns3::Dctcp::", "ns3::HpccPint::", "ns3::RealDcqcn::", "ns3::Timely::", "ns3::Swift::",
                            "ns3::HpccEcn::", "ns3::RdmaHw::NicCoalesceMethod"})
    if (key.rfind(other, 0) == 0) return true;
  return false;
}

struct Reader {
  std::string source;
  int line = 0;
  std::string key;
  std::string where() const { return source + ":" + std::to_string(line) + ": " + key + ": "; }
};

Result<double> number(const Reader& r, const std::string& v, double lo, double hi) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || end != v.c_str() + v.size()) return Error{r.where() + "expected a number, got \"" + v + "\""};
  if (x < lo || x > hi)
    return Error{r.where() + "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + v};
  return x;
}

Result<bool> flag(const Reader& r, const std::string& v) {
  if (v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  return Error{r.where() + "expected 0/1 or true/false, got \"" + v + "\""};
}

Result<double> mbps(const Reader& r, const std::string& v) {
  Result<Rate> rate = parse_rate(v);
  if (!rate) return Error{r.where() + rate.error().message};
  return rate->bps() / 1e6;
}

// "<n> <rate bps> <value> ..." as KMIN_MAP, KMAX_MAP and PMAX_MAP write it.
Result<std::map<double, double>> rate_map(const Reader& r, const std::string& v) {
  std::istringstream in(v);
  std::vector<std::string> fields;
  for (std::string f; in >> f;) fields.push_back(f);
  std::map<double, double> out;
  char* end = nullptr;
  const long n = fields.empty() ? -1 : std::strtol(fields[0].c_str(), &end, 10);
  if (n < 1 || *end != '\0' || fields.size() != size_t(1 + 2 * n))
    return Error{r.where() + "expected \"<n> <rate bps> <value> ...\" with n pairs, got \"" + v + "\""};
  for (long i = 0; i < n; ++i) {
    Result<double> rate = number(r, fields[size_t(1 + 2 * i)], 1, 1e15);
    if (!rate) return rate.error();
    Result<double> value = number(r, fields[size_t(2 + 2 * i)], 0, 1e9);
    if (!value) return value.error();
    out[*rate / 1e9] = *value;  // Gbit/s
  }
  return out;
}

}  // namespace

Result<HpccExperiment> parse_hpcc_config(std::string_view text, const std::string& source) {
  // Every key first (the last of a repeated key wins, as in the HPCC code), then meaning.
  std::map<std::string, std::pair<int, std::string>> values;
  std::istringstream in{std::string(text)};
  int number_of_line = 0;
  for (std::string line; std::getline(in, line);) {
    ++number_of_line;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::istringstream words(line);
    std::string key;
    if (!(words >> key) || key[0] == '#') continue;
    if (key == "GROUP_START{" || key == "}GROUP_END")
      return Error{source + ":" + std::to_string(number_of_line) + ": " + key +
                   ": per-node groups of settings are not read; one setting applies to every NIC"};
    std::string value;
    std::getline(words, value);
    value.erase(0, value.find_first_not_of(" \t"));
    value.erase(value.find_last_not_of(" \t") + 1);
    if (auto a = aliases().find(key); a != aliases().end()) key = a->second;
    values[key] = {number_of_line, value};
  }

  HpccExperiment e;
  apply_model(e.network, NetModel::kHpcc);
  NetConfig& c = e.network;
  double cc_mode = 1;
  bool has_win = false, var_win = false;
  std::map<std::string, std::string> dcqcn, hpcc;  // parameters of ours, by name
  std::map<double, double> kmin, kmax, pmax;
  double ack_interval = 1, chunk = 4000;

  using Handler = std::function<Status(const Reader&, const std::string&)>;
  auto num = [](double& field, double lo, double hi) -> Handler {
    return [&field, lo, hi](const Reader& r, const std::string& v) -> Status {
      Result<double> x = number(r, v, lo, hi);
      if (!x) return x.error();
      field = *x;
      return {};
    };
  };
  auto boolean = [](bool& field) -> Handler {
    return [&field](const Reader& r, const std::string& v) -> Status {
      Result<bool> x = flag(r, v);
      if (!x) return x.error();
      field = *x;
      return {};
    };
  };
  // A setting that must have the value we model (what the value means otherwise: `why`).
  auto must_be = [](bool expected, std::string why) -> Handler {
    return [expected, why](const Reader& r, const std::string& v) -> Status {
      Result<bool> x = flag(r, v);
      if (!x) return x.error();
      if (*x != expected) return Error{r.where() + why};
      return {};
    };
  };
  // A parameter of one of our algorithms: a number, or a rate turned into Mbit/s.
  auto param = [](std::map<std::string, std::string>& to, std::string name, bool rate, double lo,
                  double hi) -> Handler {
    return [&to, name, rate, lo, hi](const Reader& r, const std::string& v) -> Status {
      Result<double> x = rate ? mbps(r, v) : number(r, v, lo, hi);
      if (!x) return x.error();
      to[name] = formatted("%.12g", *x);
      return {};
    };
  };
  auto both = [](Handler a, Handler b) -> Handler {
    return [a, b](const Reader& r, const std::string& v) -> Status {
      if (Status s = a(r, v); !s) return s;
      return b(r, v);
    };
  };
  auto map_of = [](std::map<double, double>& to) -> Handler {
    return [&to](const Reader& r, const std::string& v) -> Status {
      Result<std::map<double, double>> m = rate_map(r, v);
      if (!m) return m.error();
      to = *m;
      return {};
    };
  };
  auto path = [](std::string& to) -> Handler {
    return [&to](const Reader& r, const std::string& v) -> Status {
      if (v.empty()) return Error{r.where() + "expected a file name"};
      to = v;
      return {};
    };
  };
  double payload = c.mtu_payload, buffer = 32, token_round = c.token_round_bytes, nack_us = 500, stop_s = 0;
  const std::map<std::string, Handler> handlers = {
      {"TOPOLOGY_FILE", path(e.topology_file)},
      {"FLOW_FILE", path(e.flow_file)},
      {"FCT_OUTPUT_FILE", path(e.fct_output_file)},
      {"SIMULATOR_STOP_TIME", num(stop_s, 0, 1e12)},
      {"ERROR_RATE_PER_LINK", [](const Reader& r, const std::string& v) -> Status {
         Result<double> x = number(r, v, 0, 1);
         if (!x) return x.error();
         if (*x > 0) return Error{r.where() + "random losses on every link are not modelled; use 0"};
         return {};
       }},
      {"LINK_DOWN", [](const Reader& r, const std::string& v) -> Status {
         std::istringstream words(v);
         double t = -1, a = -1, b = -1;
         if (!(words >> t >> a >> b)) return Error{r.where() + "expected \"<time> <node> <node>\", got \"" + v + "\""};
         if (t != 0 || a != 0 || b != 0) return Error{r.where() + "a link going down is not read from this file"};
         return {};
       }},
      {"CC_MODE", num(cc_mode, 0, 100)},
      {"PACKET_PAYLOAD_SIZE", num(payload, 64, 9000)},
      {"BUFFER_SIZE", num(buffer, 0.01, 65536)},
      {"ENABLE_QCN", boolean(c.ecn)},
      {"PFC_ENABLED", boolean(c.pfc)},
      {"USE_DYNAMIC_PFC_THRESHOLD", must_be(true, "static PFC thresholds are not modelled; use 1")},
      {"ACK_HIGH_PRIO", boolean(c.nic_ack_high_prio)},
      {"KMIN_MAP", map_of(kmin)},
      {"KMAX_MAP", map_of(kmax)},
      {"PMAX_MAP", map_of(pmax)},
      {"L2_ACK_INTERVAL", num(ack_interval, 0, 1e9)},
      {"L2_CHUNK_SIZE", num(chunk, 0, 1e9)},
      {"L2_BACK_TO_ZERO", must_be(false, "going back to the start of a chunk is not modelled; use 0")},
      {"TOKEN_PER_ROUND", num(token_round, 64, 1 << 20)},
      {"NACK_INTERVAL", num(nack_us, 0, 1e6)},
      {"RATE_BOUND", must_be(true, "queue pairs above their rate are not modelled; use 1")},
      {"HAS_WIN", boolean(has_win)},
      {"VAR_WIN", boolean(var_win)},
      {"RATE_AI", both(param(dcqcn, "ai_mbps", true, 0, 0), param(hpcc, "w_ai_mbps", true, 0, 0))},
      {"RATE_HAI", param(dcqcn, "hai_mbps", true, 0, 0)},
      {"MIN_RATE", both(param(dcqcn, "min_rate_mbps", true, 0, 0), param(hpcc, "min_rate_mbps", true, 0, 0))},
      {"ALPHA_RESUME_INTERVAL", param(dcqcn, "alpha_us", false, 0.001, 1e6)},
      {"RATE_DECREASE_INTERVAL", param(dcqcn, "decrease_us", false, 0.001, 1e6)},
      {"RP_TIMER", param(dcqcn, "increase_us", false, 0.001, 1e6)},
      {"EWMA_GAIN", param(dcqcn, "g", false, 0, 1)},
      {"FAST_RECOVERY_TIMES", param(dcqcn, "fast_recovery", false, 0, 1000)},
      {"CLAMP_TARGET_RATE", [&](const Reader& r, const std::string& v) -> Status {
         Result<bool> x = flag(r, v);
         if (!x) return x.error();
         dcqcn["clamp"] = *x ? "1" : "0";
         return {};
       }},
      {"U_TARGET", param(hpcc, "eta", false, 0.01, 1)},
      {"MI_THRESH", param(hpcc, "max_stage", false, 0, 1000)},
      {"FAST_REACT", must_be(true, "HPCC reacting once per RTT only is not modelled; use 1")},
      {"MULTI_RATE", must_be(false, "HPCC's per-hop rates are not modelled; use 0")},
      {"SAMPLE_FEEDBACK", must_be(false, "HPCC's sampled feedback is not modelled; use 0")},
  };
  std::vector<std::pair<int, std::string>> in_order;  // errors come in the file's order
  for (const auto& [key, at] : values) in_order.push_back({at.first, key});
  std::sort(in_order.begin(), in_order.end());
  for (const auto& [line, key] : in_order) {
    const auto& at = values[key];
    Reader r{source, line, key};
    auto h = handlers.find(key);
    if (h == handlers.end()) {
      if (without_effect(key)) continue;
      return Error{r.where() + "unknown key"};
    }
    if (Status s = h->second(r, at.second); !s) return Error{s.message()};
  }
  auto line_of = [&](const std::string& key) {
    auto it = values.find(key);
    return source + ":" + (it == values.end() ? std::string("") : std::to_string(it->second.first) + ":") + " " + key + ": ";
  };
  for (const char* required : {"TOPOLOGY_FILE", "FLOW_FILE", "FCT_OUTPUT_FILE"})
    if (!values.count(required)) return Error{source + ": " + required + ": missing"};

  c.mtu_payload = uint32_t(payload);
  c.buffer_mb = buffer;
  c.token_round_bytes = uint32_t(token_round);
  c.nack_interval = Time::us(nack_us);
  // An ACK when the bytes since the last reach the interval, and at every chunk's end.
  const double every = std::min(ack_interval > 0 ? ack_interval : chunk, chunk > 0 ? chunk : ack_interval);
  c.ack_every = uint32_t(std::max(1.0, std::ceil(every / payload)));
  if (!kmin.empty() || !kmax.empty() || !pmax.empty()) {
    for (const auto& [gbps, k] : kmin) {
      if (!kmax.count(gbps) || !pmax.count(gbps))
        return Error{line_of("KMIN_MAP") + "the rate " + formatted("%.12g", gbps * 1e9) + " needs KMAX_MAP and PMAX_MAP entries too"};
      if (kmax[gbps] <= k) return Error{line_of("KMAX_MAP") + "must be above KMIN_MAP at " + formatted("%.12g", gbps * 1e9)};
      c.ecn_thresholds.by_rate.push_back({gbps, k, kmax[gbps], pmax[gbps]});
    }
    if (kmax.size() != kmin.size() || pmax.size() != kmin.size())
      return Error{line_of("KMAX_MAP") + "KMIN_MAP, KMAX_MAP and PMAX_MAP must list the same rates"};
  }
  if (stop_s > 0) e.stop = Time::seconds(stop_s);

  auto with = [](std::string name, const std::map<std::string, std::string>& params) {
    std::string out = name;
    char sep = ':';
    for (const auto& [k, v] : params) out += sep + k + "=" + v, sep = ',';
    return out;
  };
  if (cc_mode == 1) {
    if (has_win) return Error{line_of("HAS_WIN") + "DCQCN with a window is not modelled; use 0"};
    e.cc = with("dcqcn", dcqcn);
  } else if (cc_mode == 3) {
    if (!has_win || !var_win)
      return Error{line_of(!has_win ? "HAS_WIN" : "VAR_WIN") + "HPCC is modelled with its window following its rate; use HAS_WIN 1, VAR_WIN 1"};
    e.cc = with("hpcc", hpcc);
  } else {
    return Error{line_of("CC_MODE") + formatted("%.12g", cc_mode) + " is not modelled: 1 (DCQCN) and 3 (HPCC) are"};
  }
  return e;
}

Result<HpccExperiment> load_hpcc_config(const std::string& path) {
  Result<std::string> text = read_file(path);
  if (!text) return text.error();
  return parse_hpcc_config(*text, path);
}

}  // namespace xm::sim
