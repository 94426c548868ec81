#include "ops/observation.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>

namespace xm::ops {
namespace {

using nlohmann::json;

Result<json> parse(const std::string& text, const std::string& source) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return Error{source + ": not JSON"};
  return j;
}

}  // namespace

Result<std::map<std::string, Interface>> parse_ip_addresses(const std::string& text, const std::string& source) {
  Result<json> j = parse(text, source);
  if (!j) return j.error();
  if (!j->is_array()) return Error{source + ": expected an array of interfaces"};
  std::map<std::string, Interface> out;
  try {
    for (const json& link : *j) {
      Interface i;
      std::vector<std::string> flags = link.value("flags", std::vector<std::string>{});
      i.admin_up = std::find(flags.begin(), flags.end(), "UP") != flags.end();
      i.carrier = std::find(flags.begin(), flags.end(), "LOWER_UP") != flags.end();
      i.mtu = link.value("mtu", 0u);
      i.master = link.value("master", "");
      for (const json& a : link.value("addr_info", json::array())) {
        if (a.value("family", "") != "inet") continue;
        std::optional<Ipv4> local = parse_ipv4(a.value("local", ""));
        if (local) i.addresses.push_back(Prefix{*local, uint8_t(a.value("prefixlen", 32))});
      }
      out[link.at("ifname").get<std::string>()] = std::move(i);
    }
  } catch (const json::exception& e) {
    return Error{source + ": " + e.what()};
  }
  return out;
}

Result<std::map<std::string, Neighbour>> parse_lldp_neighbours(const std::string& text, const std::string& source) {
  Result<json> j = parse(text, source);
  if (!j) return j.error();
  std::map<std::string, Neighbour> out;
  // lldpcli prints {"lldp": {}} or {"lldp": []} when there is no neighbour at all.
  json interfaces;
  if (j->is_object() && j->contains("lldp") && (*j)["lldp"].is_object()) interfaces = (*j)["lldp"].value("interface", json());
  // lldpcli prints one interface as an object keyed by its name, several as an array of such.
  // After a re-cable the old neighbour stays listed until its TTL runs out: the one heard
  // last (the least age; between equal ages the highest remote index) is the one on the
  // wire now. The remote index alone does not tell them apart when one switch's port
  // changed: lldpd numbers chassis, not neighbours.
  std::map<std::string, std::pair<long, long>> freshest;  // by interface: (-age, rid)
  auto add = [&](const std::string& name, const json& entry) {
    if (!entry.is_object()) return;
    long days = 0, h = 0, m = 0, sec = 0;
    const std::string age = entry.value("age", "");
    const long seconds = std::sscanf(age.c_str(), "%ld day, %ld:%ld:%ld", &days, &h, &m, &sec) == 4
                             ? ((days * 24 + h) * 60 + m) * 60 + sec
                             : LONG_MAX / 2;
    const std::pair<long, long> key{-seconds, std::strtol(entry.value("rid", "0").c_str(), nullptr, 10)};
    if (out.count(name) && freshest[name] > key) return;
    freshest[name] = key;
    Neighbour n;
    const json& chassis = entry.value("chassis", json::object());
    if (chassis.is_object() && !chassis.empty()) n.sysname = chassis.begin().key();
    const json& port = entry.value("port", json::object());
    if (port.is_object() && port.contains("id")) n.port = port["id"].value("value", "");
    out[name] = n;
  };
  if (interfaces.is_object()) {
    for (const auto& [name, entry] : interfaces.items()) add(name, entry);
  } else if (interfaces.is_array()) {
    for (const json& one : interfaces)
      if (one.is_object())
        for (const auto& [name, entry] : one.items()) add(name, entry);
  } else if (!interfaces.is_null()) {
    return Error{source + ": unexpected lldp.interface"};
  }
  return out;
}

Result<std::map<std::string, std::string>> parse_bgp_summary(const std::string& text, const std::string& source) {
  Result<json> j = parse(text, source);
  if (!j) return j.error();
  std::map<std::string, std::string> out;
  json peers;
  if (j->is_object() && j->contains("ipv4Unicast") && (*j)["ipv4Unicast"].is_object())
    peers = (*j)["ipv4Unicast"].value("peers", json());
  if (peers.is_object())
    for (const auto& [address, peer] : peers.items()) out[address] = peer.value("state", "?");
  return out;
}

Result<std::map<std::string, std::vector<std::string>>> parse_routes(const std::string& text, const std::string& source) {
  Result<json> j = parse(text, source);
  if (!j) return j.error();
  if (!j->is_array()) return Error{source + ": expected an array of routes"};
  std::map<std::string, std::vector<std::string>> out;
  for (const json& route : *j) {
    std::string dst = route.value("dst", "");
    if (dst.find('/') == std::string::npos && dst != "default") dst += "/32";
    std::vector<std::string>& via = out[dst];
    if (route.contains("nexthops")) {
      for (const json& hop : route["nexthops"]) via.push_back(hop.value("dev", ""));
    } else if (route.contains("gateway")) {
      via.push_back(route.value("dev", ""));
    }
  }
  return out;
}

}  // namespace xm::ops
