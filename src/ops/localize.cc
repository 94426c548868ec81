#include "ops/localize.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "util/format.h"

namespace xm::ops {
namespace {

std::string percent(double fraction) { return trimmed(fraction * 100, 3) + " %"; }

// Log-likelihood ratio of `lost` of `sent` at the observed rate against background `p0`.
double score(double sent, double lost, double p0) {
  if (sent <= 0 || lost <= 0) return 0;
  const double p = std::min(lost / sent, 1 - 1e-9);
  if (p <= p0) return 0;
  return lost * std::log(p / p0) + (sent - lost) * std::log((1 - p) / (1 - p0));
}

class Localizer {
 public:
  Localizer(const FabricPlan& plan, const Evidence& e, const LocalizeOptions& o)
      : plan_(plan), e_(e), o_(o), cables_(plan) {}

  std::vector<Finding> run() {
    hosts();
    switches();
    for (const Cable& c : plan_.cables) cable(c);
    probes();
    return std::move(out_);
  }

 private:
  const PortHealth* port(const Endpoint& end) const {
    auto it = e_.ports.find(end);
    return it == e_.ports.end() ? nullptr : &it->second;
  }
  bool scraped(const std::string& device) const {
    auto it = e_.devices.find(device);
    return it != e_.devices.end() && it->second.scraped;
  }
  // An end is known when its device's agent answers; a known end without the port
  // (unplugged, renamed) is down. A cable is down when a known end is.
  bool end_down(const Endpoint& end) const {
    if (!scraped(end.device)) return false;
    const PortHealth* h = port(end);
    return !h || !h->oper_up;
  }
  bool down(const Cable& c) const { return end_down(c.a) || end_down(c.b); }
  // Congestion, not a fault: a sender's queue on the cable overflowed in the window (a
  // training job's bursts fill a link for a second and average half its rate: seen on a
  // saturated 16 x 8 testbed, dozens of cables blamed for the loss). A link that is only
  // busy is not (seen: a 5 % loss on a spine link the demo's job fills went unseen for
  // seconds, until TCP backed off).
  // Either end: a probe that crosses one direction comes back over the other (a host
  // cable's always; a spine cable's under symmetric ECMP), so its loss may be either's.
  bool congested(uint32_t cable) const {
    const Cable& c = plan_.cables[cable];
    for (const Endpoint* sender : {&c.a, &c.b})
      if (const PortHealth* h = port(*sender);
          h && h->queue_drops >= 0.5)
        return true;
    return false;
  }
  void add(std::string component, std::string fault, std::string evidence, std::vector<uint32_t> cables = {},
           bool network = true) {
    out_.push_back(Finding{std::move(component), std::move(fault), network, std::move(evidence), std::move(cables), true});
  }
  std::vector<uint32_t> cables_of(const std::string& device) const {
    std::vector<uint32_t> out;
    for (const Port& p : plan_.find(device)->ports)
      if (const Cable* c = cables_.at(device, p.name)) out.push_back(c->id);
    return out;
  }

  void hosts() {
    for (const auto& [name, d] : e_.devices) {
      const Device* dev = plan_.find(name);
      if (!dev || dev->role != Role::kHost) continue;
      if (!d.scraped) {
        add(name, "agent-down", "the agent on " + name + " does not answer its scrape: no probes from it, none answered by it", cables_of(name), false);
        untrusted_.insert(name);
      } else if (d.lag_s > o_.max_lag_s) {
        add(name, "agent-starved",
            name + "'s agent sends its probes " + trimmed(d.lag_s * 1000, 3) + " ms late on average: the host starves it of CPU; its probes are no evidence about the network",
            cables_of(name), false);
        untrusted_.insert(name);
      }
    }
  }

  void switches() {
    for (const Device& d : plan_.devices) {
      if (d.role == Role::kHost) continue;
      size_t cables = 0, dead = 0, shut = 0;
      for (const Port& p : d.ports) {
        const Cable* c = cables_.at(d.name, p.name);
        if (!c) continue;
        ++cables;
        dead += down(*c) ? 1 : 0;
        const PortHealth* h = port(Endpoint{d.name, p.name});
        shut += h && !h->admin_up ? 1 : 0;
      }
      if (cables < 2 || dead < cables) continue;
      add(d.name, "switch-down",
          d.name + " is down: all " + std::to_string(cables) + " of its cables have no link" +
              (shut ? " (" + std::to_string(shut) + " of its ports administratively down)" : "") +
              (scraped(d.name) ? "" : "; its agent does not answer") + ". Replace or power-cycle the switch",
          cables_of(d.name));
      for (uint32_t c : cables_of(d.name)) explained_.insert(c);
    }
  }

  void cable(const Cable& c) {
    if (explained_.count(c.id)) return;
    const PortHealth* a = port(c.a);
    const PortHealth* b = port(c.b);
    const std::string name = cables_.name(c.id);
    // A flap is a loss of carrier: three downs (five changes) are three flaps.
    const double flaps = std::ceil(std::max(a ? a->carrier_changes : 0, b ? b->carrier_changes : 0) / 2 - 0.05);
    if (flaps >= o_.flaps) {
      add(name, "flapping", name + " flapped " + trimmed(flaps, 3) + " times in the last minute (carrier changes at its ends); hold it down and check the optics", {c.id});
      explained_.insert(c.id);
      return;
    }
    for (const auto& [end, h] : {std::pair{c.a, a}, std::pair{c.b, b}}) {
      if (!h || h->admin_up) continue;
      const bool host = plan_.find(end.device)->role == Role::kHost;
      const std::string where = port_name(plan_, end);
      add(where, host ? "nic-down" : "port-down",
          where + " is administratively down, so " + name + " has no link: " + (host ? "bring the NIC up (ip link set " + end.port + " up on " + end.device + ")" : "the switch port is shut: no shutdown"),
          {c.id});
      explained_.insert(c.id);
      return;
    }
    if (down(c)) {
      std::string ends;
      for (const auto& [end, h] : {std::pair{c.a, a}, std::pair{c.b, b}})
        ends += (ends.empty() ? "" : ", ") + port_name(plan_, end) +
                (!scraped(end.device) ? " not reporting" : h ? (h->oper_up ? " up" : " no carrier") : " missing");
      add(name, "link-down", name + " has no link although both ends are administratively up (" + ends + "): reseat or replace the cable or its optics", {c.id});
      explained_.insert(c.id);
      return;
    }
    for (const auto& [end, h] : {std::pair{c.a, a}, std::pair{c.b, b}})
      if (h && h->mtu && h->mtu != plan_.options.mtu)
        add(port_name(plan_, end), "mtu", port_name(plan_, end) + " has MTU " + std::to_string(h->mtu) + ", the plan " + std::to_string(plan_.options.mtu) + ": large frames over " + name + " are dropped", {c.id});
    auto planned = e_.planned_bps.find(c.id);
    double speed = 0;
    for (const PortHealth* h : {a, b})
      if (h && h->speed_bps > 0) speed = speed > 0 ? std::min(speed, h->speed_bps) : h->speed_bps;
    if (planned != e_.planned_bps.end() && speed > 0 && speed < o_.degraded * planned->second)
      add(name, "degraded", name + " runs at " + percent(speed / planned->second) + " of its planned rate (" + trimmed(speed / 1e6, 4) + " of " + trimmed(planned->second / 1e6, 4) + " Mbit/s): a lane or the negotiated speed is down; move traffic off it and replace the optics", {c.id});
  }

  // The probes' losses not yet explained, and the links that explain them, greedily.
  void probes() {
    const size_t n = e_.flows.size();
    std::vector<double> lost(n, 0);
    std::vector<bool> usable(n, false);
    for (size_t i = 0; i < n && i < e_.paths.size() && i < e_.counts.size(); ++i) {
      const ProbePath& p = e_.paths[i];
      if (!p.complete || untrusted_.count(e_.flows[i].host) || untrusted_.count(e_.flows[i].peer_host)) continue;
      if (i < e_.settled.size() && e_.settled[i]) continue;
      if (i < e_.counts.size() && e_.counts[i].late >= 0.5) continue;  // delivered late: not lost
      // Losses on a flow that crosses a fault the counters named, or a congested cable,
      // are theirs: counting them would blame the links such flows have in common (seen:
      // all-to-alls overflowing every host cable's queue, and the idle spine link most of
      // the lossy flows crossed named as lossy).
      bool explained = false;
      for (const auto* links : {&p.request, &p.reply})
        for (DirectedLink l : *links) explained |= explained_.count(cable_of(l)) > 0 || congested(cable_of(l));
      if (explained) continue;
      usable[i] = true;
      lost[i] = e_.counts[i].lost;
    }
    // Flows by the directed links they cross (each flow once per link).
    std::map<DirectedLink, std::vector<size_t>> through;
    for (size_t i = 0; i < n; ++i) {
      if (!usable[i]) continue;
      std::set<DirectedLink> links(e_.paths[i].request.begin(), e_.paths[i].request.end());
      links.insert(e_.paths[i].reply.begin(), e_.paths[i].reply.end());
      for (DirectedLink l : links) through[l].push_back(i);
    }
    std::vector<std::pair<DirectedLink, Finding>> blamed;
    auto link_score = [&](const std::vector<size_t>& flows) {
      double sent = 0, k = 0;
      for (size_t i : flows) sent += e_.counts[i].sent, k += lost[i];
      return k >= o_.min_lost ? score(sent, k, o_.background_loss) : 0;
    };
    for (int round = 0; round < 16; ++round) {
      DirectedLink best = 0;
      double best_score = 0;
      for (const auto& [link, flows] : through)
        if (const double s = link_score(flows); s > best_score) best_score = s, best = link;
      if (best_score < o_.min_score) break;
      const std::vector<size_t>& flows = through[best];
      // Links that every one of these probes crosses, and no other: the probes cannot
      // tell them apart (on a fabric of two ToRs, a ToR's uplink to a spine and that
      // spine's downlink to the other ToR).
      std::vector<DirectedLink> twins;
      for (const auto& [link, others] : through)
        if (link != best && others == flows) twins.push_back(link);
      if (const Rival r = rival_of(best, best_score, flows, through, lost, link_score); r.undecided) {
        for (size_t i : flows) lost[i] = 0;  // neither named yet, nor anything else on their losses
        for (size_t i : through[r.link]) lost[i] = 0;
        continue;
      } else if (r.together) {
        twins.push_back(r.link);
      }
      blamed.emplace_back(best, blame(best, twins, flows, lost));
      for (size_t i : flows) lost[i] = 0;
    }
    // A cable lossy both ways is one finding, named as the cable.
    std::vector<std::pair<DirectedLink, Finding>> kept;
    for (auto& [link, f] : blamed) {
      auto other = std::find_if(kept.begin(), kept.end(), [&, l = link, &g = f](const auto& k) {
        return k.first == reverse(l) && k.second.fault == g.fault;
      });
      if (other == kept.end()) {
        kept.emplace_back(link, std::move(f));
        continue;
      }
      other->second.component = cables_.name(cable_of(link));
      other->second.evidence = "both ways: " + other->second.evidence + "; and " + f.evidence;
    }
    for (auto& k : kept) out_.push_back(std::move(k.second));
  }

  struct Rival {
    DirectedLink link = 0;
    bool undecided = false;  // wait for more evidence
    bool together = false;   // name both
  };
  // Whether another link explains the best one's losses nearly as well: one that some of
  // its lossy flows also cross, scoring within `margin` of it, and needed no more once
  // the best is blamed (what is left of its own evidence is not significant: two faults
  // each show losses of their own). Early on, a few losses that happen to fall on the
  // flows two cables share can favour the wrong one (seen live: 5 % loss on tor0:spine1,
  // tor2:spine1 named first on 4 of 272 probes); a second's more evidence tells them
  // apart. Evidence strong for both (3 x min_score) that still cannot names both.
  template <class Score>
  Rival rival_of(DirectedLink best, double best_score, const std::vector<size_t>& flows,
                 const std::map<DirectedLink, std::vector<size_t>>& through, const std::vector<double>& lost,
                 const Score& link_score) const {
    std::vector<char> mine(lost.size(), 0);
    for (size_t i : flows) mine[i] = 1;
    Rival r;
    double rival_score = 0;
    for (const auto& [link, others] : through) {
      if (cable_of(link) == cable_of(best) || others == flows) continue;  // itself, or a twin
      if (std::none_of(others.begin(), others.end(), [&](size_t i) { return mine[i] && lost[i] > 0; })) continue;
      if (const double s = link_score(others); s > rival_score) rival_score = s, r.link = link;
    }
    if (rival_score <= best_score - o_.margin) return Rival{};
    std::vector<size_t> own;  // the rival's flows the best does not explain
    for (size_t i : through.at(r.link))
      if (!mine[i]) own.push_back(i);
    if (link_score(own) >= o_.min_score) return Rival{};
    (rival_score >= 3 * o_.min_score ? r.together : r.undecided) = true;
    return r;
  }

  Finding blame(DirectedLink link, const std::vector<DirectedLink>& twins, const std::vector<size_t>& flows,
                               const std::vector<double>& lost) {
    // Heavy flows lose a third or more of their probes: under random loss of a few per
    // cent hardly any does, under a black hole every 5-tuple it catches (a third, not
    // all: the window may still hold probes from before the fault).
    // Flows that lose every probe now are a black hole's too, before their count in the
    // window has caught up.
    double sent = 0, k = 0, heavy_lost = 0;
    size_t judged = 0, heavy = 0, clean = 0, running = 0, twice = 0;
    for (size_t i : flows) {
      const FlowCount& c = e_.counts[i];
      sent += c.sent, k += lost[i];
      if (lost[i] > 0 && c.lost_in_a_row >= o_.in_a_row) ++running;
      if (lost[i] > 0 && c.lost_in_a_row >= 2) ++twice;
      if (c.sent < 5) continue;
      ++judged;
      if (lost[i] >= c.sent / 3) ++heavy, heavy_lost += lost[i];
      clean += lost[i] == 0 ? 1 : 0;
    }
    const bool host_cable = plan_.cables[cable_of(link)].tier == 0;  // a probe crosses both its directions: no telling them apart
    // ECMP hashes symmetrically, so a reply retraces its request: both directions of a
    // cable carry the same probes and are named together, as the cable.
    std::vector<DirectedLink> all{link};
    all.insert(all.end(), twins.begin(), twins.end());
    std::string name;
    std::set<uint32_t> named;
    for (DirectedLink l : all) {
      if (!named.insert(cable_of(l)).second) continue;
      const bool both = host_cable || std::find(all.begin(), all.end(), reverse(l)) != all.end();
      name += (name.empty() ? "" : " or ") + cables_.name(l, !both && plan_.cables[cable_of(l)].tier != 0);
    }
    const double rate = sent > 0 ? k / sent : 0;
    std::vector<uint32_t> ids(named.begin(), named.end());
    const std::string counted = trimmed(k, 4) + " of " + trimmed(sent, 5) + " probes through it lost (" + percent(rate) + ") over " + std::to_string(flows.size()) + " flows";
    if (rate >= 0.9)
      return Finding{name, "blackhole", true, name + " drops everything while its ports are up and routing still uses it: " + counted + "; drain it", ids};
    if ((heavy > 0 && clean > 0 && heavy_lost >= 0.8 * k) || (running >= 2 && clean > 0) || (clean > 0 && concentrated(flows, lost, k / sent)))
      return Finding{name, "blackhole", true, name + " drops some 5-tuples and forwards the rest: " + std::to_string(heavy) + " of " + std::to_string(judged) + " flows through it lose most probes, " + std::to_string(clean) + " none (" + counted + "); a bad forwarding or ECMP entry: drain it", ids};
    Finding loss{name, "loss", true, name + " loses " + percent(rate) + " of the probes crossing it (" + counted + "), the rest of the fabric none; check the optics and its error counters, drain it if it persists", ids};
    loss.may_sharpen = heavy == 0 && (twice > 0 || std::all_of(flows.begin(), flows.end(), [&](size_t i) { return lost[i] < 1.5; }));  // increase() extrapolates
    return loss;
  }

  // Whether the losses sit on a few 5-tuples far beyond what independent loss at the
  // link's rate gives each: the first seconds of a black hole, while the window still
  // holds mostly probes from before it and no flow has lost a third yet. Pearson's
  // dispersion statistic against the binomial, at six of its standard deviations (under
  // random loss it stays near its degrees of freedom).
  bool concentrated(const std::vector<size_t>& flows, const std::vector<double>& lost, double rate) const {
    if (rate <= 0 || rate >= 1) return false;
    double x2 = 0, k = 0;
    size_t judged = 0;
    for (size_t i : flows) {
      const double n = e_.counts[i].sent;
      if (n < 5) continue;
      ++judged, k += lost[i];
      const double expect = n * rate;
      x2 += (lost[i] - expect) * (lost[i] - expect) / (expect * (1 - rate));
    }
    if (judged < 6 || k < 10) return false;
    const double df = static_cast<double>(judged - 1);
    return x2 > df + 6 * std::sqrt(2 * df);
  }

  const FabricPlan& plan_;
  const Evidence& e_;
  const LocalizeOptions& o_;
  CableIndex cables_;
  std::set<std::string> untrusted_;  // hosts whose probes are no evidence
  std::set<uint32_t> explained_;     // cables whose fault the counters already name
  std::vector<Finding> out_;
};

}  // namespace

std::vector<Finding> localize(const FabricPlan& plan, const Evidence& evidence, const LocalizeOptions& options) {
  return Localizer(plan, evidence, options).run();
}

}  // namespace xm::ops
