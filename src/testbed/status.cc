#include "testbed/status.h"

#include <cstdio>
#include <nlohmann/json.hpp>

#include "testbed/system.h"
#include "testbed/units.h"
#include "util/format.h"

namespace xm::testbed {
namespace {

using nlohmann::json;

json counters_json(const LinkCounters& c) {
  return {{"state", c.up ? "up" : "down"}, {"tx_bytes", c.tx_bytes},     {"rx_bytes", c.rx_bytes},
          {"tx_packets", c.tx_packets},    {"rx_packets", c.rx_packets}, {"tx_dropped", c.tx_dropped}};
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string rpad(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

}  // namespace

Result<std::map<std::string, LinkCounters>> parse_link_stats(const std::string& text, const std::string& source) {
  try {
    std::map<std::string, LinkCounters> out;
    for (const json& link : json::parse(text)) {
      LinkCounters c;
      c.up = link.value("operstate", "") == "UP";
      const json& stats = link.at("stats64");
      c.rx_bytes = stats.at("rx").at("bytes").get<uint64_t>();
      c.rx_packets = stats.at("rx").at("packets").get<uint64_t>();
      c.tx_bytes = stats.at("tx").at("bytes").get<uint64_t>();
      c.tx_packets = stats.at("tx").at("packets").get<uint64_t>();
      c.tx_dropped = stats.at("tx").value("dropped", uint64_t{0});
      out[link.at("ifname").get<std::string>()] = c;
    }
    return out;
  } catch (const json::exception& e) {
    return Error{source + ": unexpected output: " + e.what()};
  }
}

Result<Snapshot> take_snapshot(const Plan& plan) {
  auto read = [&](const std::string& ns) -> Result<std::map<std::string, LinkCounters>> {
    std::vector<std::string> argv{"ip", "-n", ns, "-s", "-j", "link", "show"};
    Result<std::string> out = run_command(argv);
    if (!out)
      return Error{out.error().message + "\ntestbed " + plan.name + " is incomplete; remove it with `xm testbed down --name " +
                   plan.name + "`"};
    return parse_link_stats(*out, "`" + command_line(argv) + "`");
  };
  Snapshot s;
  s.plan = plan;
  for (const HostPlan& h : plan.hosts) {
    Result<std::map<std::string, LinkCounters>> links = read(h.netns);
    if (!links) return Error{links.error().message};
    std::vector<LinkCounters> nics;
    for (const NicPlan& n : h.nics) {
      auto it = links->find(n.ifname);
      if (it == links->end()) return Error{"testbed " + plan.name + ": " + h.netns + " has no " + n.ifname};
      nics.push_back(it->second);
    }
    s.nics.push_back(std::move(nics));
  }
  // Each uplink at its ToR end, turned round: rx is what went into the spine.
  std::map<std::string, std::map<std::string, LinkCounters>> tors;
  for (const UplinkPlan& u : plan.uplinks) {
    if (!tors.count(u.tor)) {
      Result<std::map<std::string, LinkCounters>> links = read(plan.netns_of(u.tor));
      if (!links) return Error{links.error().message};
      tors[u.tor] = std::move(links).value();
    }
    auto it = tors[u.tor].find(u.tor_port);
    if (it == tors[u.tor].end()) return Error{"testbed " + plan.name + ": " + u.tor + " has no " + u.tor_port};
    LinkCounters c = it->second;
    std::swap(c.rx_bytes, c.tx_bytes);
    std::swap(c.rx_packets, c.tx_packets);
    s.spine.push_back(c);
  }
  return s;
}

std::string snapshot_json(const Snapshot& s) {
  const Plan& p = s.plan;
  json hosts = json::array();
  for (size_t i = 0; i < p.hosts.size(); ++i) {
    json nics = json::array();
    for (size_t k = 0; k < p.hosts[i].nics.size(); ++k) {
      const NicPlan& n = p.hosts[i].nics[k];
      json j = {{"name", n.ifname},       {"device", n.device},   {"rail", n.rail},
                {"address", n.address},   {"prefix", n.prefix},         {"mac", n.mac},
                {"rate", rate_string(n.rate_bps)}, {"rate_bps", n.rate_bps}, {"fabric_port", n.fabric_port}};
      j.update(counters_json(s.nics[i][k]));
      nics.push_back(j);
    }
    hosts.push_back({{"name", p.hosts[i].name}, {"index", p.hosts[i].index}, {"netns", p.hosts[i].netns}, {"nics", nics}});
  }
  json links = json::array();
  for (size_t k = 0; k < p.uplinks.size(); ++k) {
    const UplinkPlan& u = p.uplinks[k];
    json j = {{"rail", u.rail},       {"tor", u.tor},         {"name", u.tor_port}, {"spine", u.spine},
              {"spine_port", u.spine_port}, {"address", u.address}, {"prefix", 31},
              {"rate", rate_string(u.rate_bps)}, {"rate_bps", u.rate_bps}};
    j.update(counters_json(s.spine[k]));
    links.push_back(j);
  }
  // Per rail, its ToR's uplinks together: what crossed rails from and to it.
  json rails = json::array();
  for (const RailPlan& r : p.rails) {
    LinkCounters sum;
    sum.up = true;
    uint64_t rate = 0;
    for (size_t k = 0; k < p.uplinks.size(); ++k) {
      if (p.uplinks[k].tor != r.tor) continue;
      const LinkCounters& c = s.spine[k];
      sum.up = sum.up && c.up;
      sum.rx_bytes += c.rx_bytes, sum.tx_bytes += c.tx_bytes, sum.rx_packets += c.rx_packets;
      sum.tx_packets += c.tx_packets, sum.tx_dropped += c.tx_dropped;
      rate += p.uplinks[k].rate_bps;
    }
    json j = {{"rail", r.rail}, {"tor", r.tor}, {"address", r.address}, {"prefix", 24},
              {"rate", rate_string(rate)}, {"rate_bps", rate}};
    j.update(counters_json(sum));
    rails.push_back(j);
  }
  json switches = json::array();
  for (const SwitchPlan& sw : p.switches) switches.push_back({{"name", sw.name}, {"role", sw.role}, {"netns", sw.netns}});
  json out = {{"name", p.name},
              {"source", p.source},
              {"subnet", "10." + std::to_string(p.subnet) + ".0.0/16"},
              {"mtu", p.mtu},
              {"hosts", hosts},
              {"switches", switches},
              {"spine", {{"links", links}, {"rails", rails}}}};
  return out.dump(2) + "\n";
}

std::string snapshot_text(const Snapshot& s) {
  const Plan& p = s.plan;
  std::string out = "testbed " + p.name + ": " + std::to_string(p.hosts.size()) + " hosts × " +
                    std::to_string(p.rails.size()) + " rails, 10." + std::to_string(p.subnet) + ".0.0/16, MTU " +
                    std::to_string(p.mtu) + " (spec: " + p.source + ")\n\n";
  out += pad("host", 6) + pad("netns", 17) + pad("nic", 9) + pad("address", 17) + pad("rate", 11) + pad("state", 6) +
         rpad("tx bytes", 15) + rpad("rx bytes", 15) + "\n";
  for (size_t i = 0; i < p.hosts.size(); ++i)
    for (size_t k = 0; k < p.hosts[i].nics.size(); ++k) {
      const NicPlan& n = p.hosts[i].nics[k];
      const LinkCounters& c = s.nics[i][k];
      out += pad(p.hosts[i].name, 6) + pad(p.hosts[i].netns, 17) + pad(n.ifname, 9) + pad(n.address + "/" + std::to_string(n.prefix), 17) +
             pad(rate_string(n.rate_bps), 11) + pad(c.up ? "up" : "down", 6) + rpad(with_commas(c.tx_bytes), 15) +
             rpad(with_commas(c.rx_bytes), 15) + "\n";
    }
  out += "\nToR-spine links (into spine: sent by the ToR)\n";
  out += pad("tor", 7) + pad("port", 9) + pad("spine", 9) + pad("address", 17) + pad("rate", 11) + pad("state", 6) +
         rpad("into spine", 15) + rpad("out of spine", 15) + "\n";
  for (size_t k = 0; k < p.uplinks.size(); ++k) {
    const UplinkPlan& u = p.uplinks[k];
    const LinkCounters& c = s.spine[k];
    out += pad(u.tor, 7) + pad(u.tor_port, 9) + pad(u.spine, 9) + pad(u.address + "/31", 17) +
           pad(rate_string(u.rate_bps), 11) + pad(c.up ? "up" : "down", 6) + rpad(with_commas(c.rx_bytes), 15) +
           rpad(with_commas(c.tx_bytes), 15) + "\n";
  }
  return out;
}

}  // namespace xm::testbed
