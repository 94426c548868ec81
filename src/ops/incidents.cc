#include "ops/incidents.h"

#include <algorithm>

namespace xm::ops {
namespace {

bool contains_all(const std::vector<uint32_t>& outer, const std::vector<uint32_t>& inner) {
  return !inner.empty() && std::all_of(inner.begin(), inner.end(), [&](uint32_t c) {
    return std::find(outer.begin(), outer.end(), c) != outer.end();
  });
}

// A class the evidence weakens to when a fault is repaired or fades, not a new fault: the
// incident keeps its class.
bool weakened(const std::string& was, const std::string& now) {
  if (was == "blackhole") return now == "loss";
  if (was == "nic-down" || was == "port-down") return now == "link-down";
  return false;
}

class Tracker {
 public:
  Tracker(std::vector<Incident>& incidents, double now, IncidentLog* log) : incidents_(incidents), now_(now), log_(log) {}

  void see(const Finding& f) {
    using It = std::vector<Incident>::iterator;
    // The open incident on the same component, or on the same single cable.
    It open = find([&](const Incident& i) {
      return i.finding.component == f.component || (i.finding.cables.size() == 1 && i.finding.cables == f.cables);
    });
    // A cable of a switch that is down, seen without carrier as the switch comes back.
    if (open == incidents_.end()) open = find([&](const Incident& i) { return i.finding.cables.size() > 1 && contains_all(i.finding.cables, f.cables); });
    if (open != incidents_.end()) return follow(*open, f);
    // A switch (or host) found down after some of its cables were.
    if (f.cables.size() > 1 && fold(f)) return;
    Incident i;
    i.opened_at = i.last_seen = now_, i.finding = f;
    if (log_) {
      Result<int64_t> id = log_->opened(IncidentRow{0, now_, 0, f.component, f.fault, f.evidence, f.network});
      i.id = id ? *id : 0;
    }
    if (i.id == 0) i.id = int64_t(incidents_.size()) + 1;
    incidents_.push_back(std::move(i));
  }

  void close_unseen(double clear_after_s) {
    for (Incident& i : incidents_)
      if (i.closed_at == 0 && now_ - i.last_seen >= clear_after_s) {
        i.closed_at = now_;
        if (log_) (void)log_->closed(i.id, now_);
      }
  }

 private:
  template <typename Pred>
  std::vector<Incident>::iterator find(Pred pred) {
    return std::find_if(incidents_.begin(), incidents_.end(), [&](const Incident& i) { return i.closed_at == 0 && pred(i); });
  }

  void follow(Incident& open, const Finding& f) {
    // One of the cables of a switch's incident: the switch's incident still.
    if (open.finding.component != f.component && open.finding.cables.size() > 1) {
      open.last_seen = now_;
      return;
    }
    if (open.last_seen == now_ && open.finding.fault != f.fault) return;  // two classes at once: the first stands
    if (weakened(open.finding.fault, f.fault)) {
      // A black hole's own probes fading from the window keep it open while they last; a
      // NIC or port brought back up is not seen again as itself, so it closes in time, and
      // a cable still dark then opens its own incident.
      if (open.finding.fault == "blackhole") open.last_seen = now_;
      return;
    }
    open.last_seen = now_, open.finding = f;
    if (log_) (void)log_->updated(open.id, f.fault, f.evidence, f.component);
  }

  // Folds the open incidents on some of `f`'s cables into the first of them, now `f`.
  bool fold(const Finding& f) {
    auto part = [&](const Incident& i) { return contains_all(f.cables, i.finding.cables); };
    auto first = find(part);
    if (first == incidents_.end()) return false;
    first->last_seen = now_, first->finding = f;
    if (log_) (void)log_->updated(first->id, f.fault, f.evidence, f.component);
    for (auto it = std::next(first); it != incidents_.end();)
      if (it->closed_at == 0 && part(*it)) {
        if (log_) (void)log_->removed(it->id);
        it = incidents_.erase(it);
      } else {
        ++it;
      }
    return true;
  }

  std::vector<Incident>& incidents_;
  const double now_;
  IncidentLog* log_;
};

}  // namespace

void track(std::vector<Incident>& incidents, const std::vector<Finding>& findings, double now, double clear_after_s,
           IncidentLog* log) {
  Tracker t(incidents, now, log);
  for (const Finding& f : findings) t.see(f);
  t.close_unseen(clear_after_s);
}

}  // namespace xm::ops
