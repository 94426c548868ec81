#include "ops/heal.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <set>

#include "ops/probe_paths.h"
#include "testbed/daemons.h"
#include "testbed/system.h"

namespace xm::ops {
namespace {

bool contains(const std::vector<BgpSession>& list, const BgpSession& s) { return std::find(list.begin(), list.end(), s) != list.end(); }

// The session over `cable` as its `end` sees it (the far end's address as neighbour).
std::optional<BgpSession> session_at(const FabricPlan& plan, const Cable& cable, bool at_b) {
  const Endpoint& near = at_b ? cable.b : cable.a;
  const Endpoint& far = at_b ? cable.a : cable.b;
  const Device* d = plan.find(near.device);
  const Device* peer = plan.find(far.device);
  const Port* p = peer ? peer->find_port(far.port) : nullptr;
  if (!d || d->role == Role::kHost || !p || !p->address) return std::nullopt;
  return BgpSession{d->name, d->asn, to_string(p->address->base)};
}

// Faults routing does not see, on a cable that still carries traffic: BFD and BGP take
// a cable without carrier, a port shut or a switch down out of ECMP by themselves, and
// bring it back when it returns; these they would not, or only to lose it again.
bool needs_drain(const std::string& fault) {
  return fault == "loss" || fault == "blackhole" || fault == "degraded" || fault == "flapping" || fault == "mtu";
}

// The upper ends of `lower`'s cables at `tier` whose sessions are open, but `skip`.
std::set<std::string> open_uplinks(const FabricPlan& plan, const std::string& lower, uint32_t tier, uint32_t skip,
                                   const std::vector<BgpSession>& shut) {
  std::set<std::string> up;
  for (const Cable& o : plan.cables)
    if (o.id != skip && o.tier == tier && o.a.device == lower)
      if (std::optional<BgpSession> s = session_at(plan, o, false); s && !contains(shut, *s)) up.insert(o.b.device);
  return up;
}

// The first switch of `cable`'s lower tier that would share no open upper switch with the
// cable's lower end once it is drained; "" when none.
std::string cut_off_from(const FabricPlan& plan, const Cable& cable, const std::vector<BgpSession>& shut) {
  const std::set<std::string> mine = open_uplinks(plan, cable.a.device, cable.tier, cable.id, shut);
  std::set<std::string> others;
  for (const Cable& o : plan.cables)
    if (o.tier == cable.tier && o.a.device != cable.a.device) others.insert(o.a.device);
  for (const std::string& other : others) {
    const std::set<std::string> theirs = open_uplinks(plan, other, cable.tier, cable.id, shut);
    if (std::none_of(mine.begin(), mine.end(), [&](const std::string& u) { return theirs.count(u) > 0; })) return other;
  }
  return "";
}

}  // namespace

HealPlan plan_heal(const FabricPlan& plan, const Finding& finding, const std::vector<BgpSession>& already_shut) {
  HealPlan out;
  if (!finding.network) return out;
  CableIndex names(plan);
  std::vector<BgpSession> shut = already_shut;
  for (uint32_t id : finding.cables) {
    if (id >= plan.cables.size()) continue;
    const Cable& c = plan.cables[id];
    if (c.tier == 0) {  // a host's cable: its rail, on that host, is to be avoided
      const Device* host = plan.find(c.a.device);
      const Port* nic = host ? host->find_port(c.a.port) : nullptr;
      if (nic && nic->address) out.avoid.push_back({to_string(nic->address->base), c.a.device + "/" + c.a.port});
      continue;
    }
    if (!needs_drain(finding.fault)) continue;
    std::optional<BgpSession> lower = session_at(plan, c, false), upper = session_at(plan, c, true);
    if (!lower || !upper || (contains(shut, *lower) && contains(shut, *upper))) continue;
    // The lower end's other uplinks still open: a switch keeps at least one.
    if (open_uplinks(plan, c.a.device, c.tier, c.id, shut).empty()) {
      out.kept += (out.kept.empty() ? "" : "; ") + names.name(c.id) + " (" + c.a.device + "'s last uplink)";
      continue;
    }
    // ... and shares an open upper switch with every other switch of its tier: with tor4's
    // uplink to spine1 drained and then tor6's to spine0, tor4 and tor6 had no spine in
    // common and every probe between their rails was lost (seen live, a saturated run's
    // false alarms drained so, one after another).
    if (std::string apart = cut_off_from(plan, c, shut); !apart.empty()) {
      out.kept += (out.kept.empty() ? "" : "; ") + names.name(c.id) + " (" + c.a.device + " would share no " +
                  c.b.device.substr(0, c.b.device.find_first_of("0123456789")) + " with " + apart + ")";
      continue;
    }
    DrainedCable cable{c.id, names.name(c.id), {}};
    for (const BgpSession& s : {*lower, *upper})
      if (!contains(shut, s)) shut.push_back(s), cable.sessions.push_back(s);
    out.drained.push_back(std::move(cable));
  }
  return out;
}

std::vector<BgpSession> HealPlan::sessions() const {
  std::vector<BgpSession> out;
  for (const DrainedCable& c : drained) out.insert(out.end(), c.sessions.begin(), c.sessions.end());
  return out;
}

BgpControl testbed_bgp(const testbed::Plan& testbed) {
  return [&testbed](const std::vector<BgpSession>& sessions, bool shut, const std::string& why) -> Status {
    std::map<std::string, std::vector<std::string>> lines;  // by device: vtysh's -c arguments
    for (const BgpSession& s : sessions) {
      std::vector<std::string>& l = lines[s.device];
      if (l.empty()) l = {"-c", "configure terminal", "-c", "router bgp " + std::to_string(s.asn)};
      l.insert(l.end(), {"-c", shut ? "neighbor " + s.neighbour + " shutdown message " + why : "no neighbor " + s.neighbour + " shutdown"});
    }
    std::vector<std::pair<std::string, std::future<Result<std::string>>>> calls;
    for (auto& [device, args] : lines) {
      std::vector<std::string> argv{"vtysh", "--vty_socket", testbed::daemon_dir(testbed.name, device)};
      argv.insert(argv.end(), args.begin(), args.end());
      calls.emplace_back(device, std::async(std::launch::async, [argv] { return testbed::run_command(argv); }));
    }
    // A switch that is down does not answer: the other end's shutdown drains the session.
    std::string errors;
    size_t ok = 0;
    for (auto& [device, call] : calls) {
      Result<std::string> r = call.get();
      if (r) ++ok;
      else errors += (errors.empty() ? "" : "; ") + device + ": " + r.error().message;
    }
    if (ok == 0 && !calls.empty()) return Error{errors};
    return Status::Ok();
  };
}

Status write_rail_advice(const std::string& path, const std::vector<std::pair<RailAdvice, std::string>>& advice) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    out << "# rails to avoid: one address per line (xm ops controller; xccl reads it as XCCL_RAIL_ADVICE)\n";
    for (const auto& [rail, why] : advice) out << rail.address << "  # " << rail.nic << ": " << why << "\n";
    if (!out) return Error{"cannot write " + tmp};
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Error{"cannot rename " + tmp + " to " + path + ": " + ec.message()};
  return Status::Ok();
}

}  // namespace xm::ops
