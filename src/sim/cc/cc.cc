// The algorithm registry, and "none": every flow at line rate, no window (a baseline
// that shows what the fabric does with no congestion control at all).
#include "sim/cc/cc.h"

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
         "tita-no-switch, tita-no-fanin, tita-no-start";
}

Result<std::unique_ptr<CongestionControl>> make_cc(std::string_view name, Rate line) {
  std::unique_ptr<CongestionControl> cc;
  if (name == "none") cc = std::make_unique<LineRate>();
  else if (name == "dcqcn" || name == "dcqcn-vendor") cc = std::make_unique<Dcqcn>(DcqcnParams::vendor(line), std::string(name));
  else if (name == "dcqcn-paper") cc = std::make_unique<Dcqcn>(DcqcnParams::paper(line), "dcqcn-paper");
  else if (name == "hpcc") cc = std::make_unique<Hpcc>(HpccParams::for_line(line));
  else if (name.starts_with("tita")) {
    TitaParams p = TitaParams::for_line(line);
    if (name == "tita-no-switch") p.switch_util = false;
    else if (name == "tita-no-fanin") p.fan_in = false;
    else if (name == "tita-no-start") p.fair_start = false;
    else if (name != "tita") cc = nullptr, p.eta = -1;
    if (p.eta > 0) cc = std::make_unique<Tita>(p, std::string(name));
  }
  if (!cc) return Error{"unknown congestion control \"" + std::string(name) + "\"; expected one of: " + cc_names()};
  return cc;
}

}  // namespace xm::sim
