// The algorithm registry, and "none": every flow at line rate, no window (a baseline
// that shows what the fabric does with no congestion control at all).
#include "sim/cc/cc.h"

#include <cstdlib>
#include <map>

#include "sim/cc/dcqcn.h"
#include "sim/cc/hpcc.h"
#include "sim/cc/tita.h"

namespace xm::sim {
namespace {

class LineRate final : public CongestionControl {
 public:
  std::string name() const override { return "none"; }
  CcNeeds needs() const override { return {}; }
  void on_start(CcHost& host, uint32_t flow) override { host.set_window(flow, 0); }
  void on_ack(CcHost&, uint32_t, const Packet&, const IntHop*) override {}
};

}  // namespace

const char* cc_names() {
  return "none, dcqcn (= dcqcn-vendor), dcqcn-vendor, dcqcn-paper, hpcc, tita, "
         "tita-no-switch, tita-no-fanin, tita-no-start; parameters after a colon, e.g. "
         "hpcc:eta=0.9 or tita:eta=0.98,gamma=0.5";
}

namespace {

// "name:key=value,key=value" -> name and the pairs.
Result<std::map<std::string, double>> parse_overrides(std::string_view text) {
  std::map<std::string, double> out;
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) return Error{"expected key=value, got \"" + std::string(item) + "\""};
    const std::string key(item.substr(0, eq)), value(item.substr(eq + 1));
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (value.empty() || end != value.c_str() + value.size()) return Error{key + ": expected a number, got \"" + value + "\""};
    out[key] = v;
    text = comma == std::string_view::npos ? std::string_view() : text.substr(comma + 1);
  }
  return out;
}

// Takes each known key out of `o` into its field; whatever is left is unknown.
struct Overrides {
  std::map<std::string, double> o;
  void take(const char* key, double& field) {
    if (auto it = o.find(key); it != o.end()) field = it->second, o.erase(it);
  }
  void take(const char* key, bool& field) {
    if (auto it = o.find(key); it != o.end()) field = it->second != 0, o.erase(it);
  }
  void take_mbps(const char* key, Rate& field) {
    if (auto it = o.find(key); it != o.end()) field = Rate::mbps(it->second), o.erase(it);
  }
  void take_us(const char* key, Time& field) {
    if (auto it = o.find(key); it != o.end()) field = Time::us(it->second), o.erase(it);
  }
};

}  // namespace

Result<std::unique_ptr<CongestionControl>> make_cc(std::string_view spec, Rate line) {
  const size_t colon = spec.find(':');
  const std::string_view name = spec.substr(0, colon);
  Overrides ov;
  if (colon != std::string_view::npos) {
    auto parsed = parse_overrides(spec.substr(colon + 1));
    if (!parsed) return Error{"congestion control \"" + std::string(spec) + "\": " + parsed.error().message};
    ov.o = *parsed;
  }
  std::unique_ptr<CongestionControl> cc;
  if (name == "none") {
    cc = std::make_unique<LineRate>();
  } else if (name == "dcqcn" || name == "dcqcn-vendor" || name == "dcqcn-paper") {
    DcqcnParams p = name == "dcqcn-paper" ? DcqcnParams::paper(line) : DcqcnParams::vendor(line);
    double steps = p.fast_recovery_steps, bytes = double(p.byte_counter);
    ov.take_us("alpha_us", p.alpha_interval);
    ov.take_us("decrease_us", p.decrease_interval);
    ov.take_us("increase_us", p.increase_interval);
    ov.take("g", p.g);
    ov.take("fast_recovery", steps);
    ov.take("byte_counter", bytes);
    ov.take_mbps("ai_mbps", p.ai);
    ov.take_mbps("hai_mbps", p.hai);
    ov.take_mbps("min_rate_mbps", p.min_rate);
    ov.take("clamp", p.clamp_target);
    p.fast_recovery_steps = uint32_t(steps), p.byte_counter = uint64_t(bytes);
    cc = std::make_unique<Dcqcn>(p, std::string(spec));
  } else if (name == "hpcc") {
    HpccParams p = HpccParams::for_line(line);
    double stage = p.max_stage;
    ov.take("eta", p.eta);
    ov.take("max_stage", stage);
    ov.take_mbps("w_ai_mbps", p.w_ai);
    ov.take_mbps("min_rate_mbps", p.min_rate);
    p.max_stage = uint32_t(stage);
    cc = std::make_unique<Hpcc>(p, std::string(spec));
  } else if (name == "tita" || name == "tita-no-switch" || name == "tita-no-fanin" || name == "tita-no-start") {
    TitaParams p = TitaParams::for_line(line);
    p.switch_util = name != "tita-no-switch";
    p.fan_in = name != "tita-no-fanin";
    p.fair_start = name != "tita-no-start";
    ov.take("eta", p.eta);
    ov.take("gamma", p.gamma);
    ov.take("switch", p.switch_util);
    ov.take("fanin", p.fan_in);
    ov.take("start", p.fair_start);
    ov.take("cut_new", p.cut_newcomer);
    ov.take_us("share_ttl_us", p.share_ttl);
    ov.take_mbps("w_ai_mbps", p.w_ai);
    ov.take_mbps("min_rate_mbps", p.min_rate);
    cc = std::make_unique<Tita>(p, std::string(spec));
  } else {
    return Error{"unknown congestion control \"" + std::string(spec) + "\"; expected one of: " + cc_names()};
  }
  if (!ov.o.empty())
    return Error{"congestion control \"" + std::string(spec) + "\": unknown parameter \"" + ov.o.begin()->first + "\""};
  return cc;
}

}  // namespace xm::sim
