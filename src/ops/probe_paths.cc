#include "ops/probe_paths.h"

#include <algorithm>
#include <future>

namespace xm::ops {

CableIndex::CableIndex(const FabricPlan& plan) : plan_(plan) {
  for (const Cable& c : plan.cables) {
    ends_[{c.a.device, c.a.port}] = {c.id, false};
    ends_[{c.b.device, c.b.port}] = {c.id, true};
  }
  for (const Device& d : plan.devices)
    if (d.role == Role::kHost)
      for (const Port& p : d.ports)
        if (p.address) hosts_by_address_[p.address->base.value] = Endpoint{d.name, p.name};
}

const Cable* CableIndex::at(const std::string& device, const std::string& port, bool* is_b) const {
  auto it = ends_.find({device, port});
  if (it == ends_.end()) return nullptr;
  if (is_b) *is_b = it->second.second;
  return &plan_.cables[it->second.first];
}

const Endpoint* CableIndex::host_port(Ipv4 address) const {
  auto it = hosts_by_address_.find(address.value);
  return it == hosts_by_address_.end() ? nullptr : &it->second;
}

std::string port_name(const FabricPlan& plan, const Endpoint& end) {
  const Device* d = plan.find(end.device);
  return end.device + (d && d->role == Role::kHost ? "/" : ":") + end.port;
}

std::string CableIndex::name(uint32_t cable) const {
  const Cable& c = plan_.cables[cable];
  return port_name(plan_, c.a) + " - " + port_name(plan_, c.b);
}

std::string CableIndex::name(DirectedLink link, bool with_direction) const {
  if (!with_direction) return name(cable_of(link));
  const Cable& c = plan_.cables[cable_of(link)];
  const Endpoint& from = from_b(link) ? c.b : c.a;
  const Endpoint& to = from_b(link) ? c.a : c.b;
  return port_name(plan_, from) + " -> " + port_name(plan_, to);
}

namespace {

// One direction of one probe, walked a hop at a time.
struct Walk {
  Ipv4 src, dst;
  uint16_t sport = 0, dport = 0;
  std::string device, in_port;  // where it is now: arrived at `device` on `in_port`
  std::vector<DirectedLink>* links = nullptr;
  size_t flow = 0;  // whose
  bool done = false, complete = false;
};

// Enters the cable at (device, port) and arrives at its far end.
bool cross(const CableIndex& cables, Walk& w, const std::string& device, const std::string& port) {
  bool is_b = false;
  const Cable* c = cables.at(device, port, &is_b);
  if (!c) return false;
  w.links->push_back(directed(c->id, is_b));
  const Endpoint& far = is_b ? c->a : c->b;
  w.device = far.device, w.in_port = far.port;
  return true;
}

}  // namespace

Result<std::vector<ProbePath>> trace_probe_paths(const FabricPlan& plan, const std::vector<ProbeFlow>& flows,
                                                 uint16_t probe_port, const RouteLookup& lookup) {
  CableIndex cables(plan);
  std::vector<ProbePath> paths(flows.size());
  std::vector<Walk> walks;
  walks.reserve(2 * flows.size());
  auto address = [&](const std::string& host, const std::string& nic) -> const Port* {
    const Device* d = plan.find(host);
    const Port* p = d ? d->find_port(nic) : nullptr;
    return p && p->address ? p : nullptr;
  };
  for (size_t i = 0; i < flows.size(); ++i) {
    const ProbeFlow& f = flows[i];
    const Port* a = address(f.host, f.nic);
    const Port* b = address(f.peer_host, f.peer_nic);
    if (!a || !b) return Error{"probe flow " + f.host + "/" + f.nic + " -> " + f.peer_host + "/" + f.peer_nic + ": not in the plan"};
    const uint16_t sport = uint16_t(probe_port + 1 + f.flow);
    Walk request{a->address->base, b->address->base, sport, probe_port, "", "", &paths[i].request, i};
    Walk reply{b->address->base, a->address->base, probe_port, sport, "", "", &paths[i].reply, i};
    if (cross(cables, request, f.host, f.nic)) walks.push_back(request);
    if (cross(cables, reply, f.peer_host, f.peer_nic)) walks.push_back(reply);
  }

  for (int hop = 0; hop < 10; ++hop) {
    // Walks that arrived at their host are done; a ToR delivers to its own subnet by
    // address; the rest ask their switch.
    std::map<std::string, std::vector<size_t>> asking;  // device -> walks
    for (size_t w = 0; w < walks.size(); ++w) {
      Walk& k = walks[w];
      if (k.done) continue;
      const Device* d = plan.find(k.device);
      if (!d || d->role == Role::kHost) {
        k.done = true, k.complete = d && k.links->size() > 0;
        continue;
      }
      if (d->subnet && d->subnet->prefix.contains(k.dst)) {
        const Endpoint* h = cables.host_port(k.dst);
        const Port* down = nullptr;
        if (h)
          for (const Port& p : d->ports)
            if (p.peer_device == h->device && p.peer_port == h->port) down = &p;
        if (!down || !cross(cables, k, d->name, down->name)) k.done = true;
        continue;
      }
      asking[d->name].push_back(w);
    }
    if (asking.empty() && std::all_of(walks.begin(), walks.end(), [](const Walk& k) { return k.done; })) break;
    std::vector<std::pair<std::string, std::future<Result<std::vector<std::string>>>>> answers;
    for (const auto& [device, ws] : asking) {
      const Device* d = plan.find(device);
      std::vector<RouteQuery> q;
      for (size_t w : ws) {
        const Walk& k = walks[w];
        const Port* in = d->find_port(k.in_port);
        // A ToR's host ports are bridged: packets from hosts arrive on the bridge.
        std::string iif = in && in->rail != kNoRail && d->subnet ? d->subnet->bridge : k.in_port;
        q.push_back(RouteQuery{k.src, k.dst, iif, k.sport, k.dport});
      }
      answers.emplace_back(device, std::async(std::launch::async, lookup, device, std::move(q)));
    }
    for (auto& [device, future] : answers) {
      Result<std::vector<std::string>> out = future.get();
      if (!out) return Error{device + ": " + out.error().message};
      const std::vector<size_t>& ws = asking[device];
      for (size_t i = 0; i < ws.size(); ++i) {
        Walk& k = walks[ws[i]];
        const std::string port = i < out->size() ? (*out)[i] : "";
        if (port.empty() || !cross(cables, k, device, port)) k.done = true;
      }
    }
  }
  // Which paths got through: both directions must end at a host.
  std::vector<int> ends(flows.size(), 0);
  for (const Walk& k : walks) ends[k.flow] += k.complete ? 1 : 0;
  for (size_t i = 0; i < flows.size(); ++i) paths[i].complete = ends[i] == 2;
  return paths;
}

RouteLookup testbed_route_lookup(const testbed::Plan& plan) {
  return [&plan](const std::string& device, const std::vector<RouteQuery>& queries) -> Result<std::vector<std::string>> {
    Result<RouteAsker> asker = RouteAsker::open(plan.netns_of(device));
    if (!asker) return asker.error();
    return asker->ask(queries);
  };
}

}  // namespace xm::ops
