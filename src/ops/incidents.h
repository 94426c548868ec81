// Incidents from findings: what the controller keeps between evaluations. Each
// evaluation's findings (localize.h) open incidents, sharpen or fold the open ones, and
// incidents not seen for `clear_after_s` close. One fault is one incident however it is
// seen from one scrape to the next:
//
//  - on one component, or on one cable, its class follows the evidence as it sharpens
//    (the first seconds of a black hole look like loss; a cable seen without carrier,
//    then its NIC administratively down);
//  - but not back: a black hole fading from the window reads as loss, a NIC or port
//    brought back up reads for one scrape as a cable without carrier (its two ends are
//    scraped at different instants). The sharper class stands; were the weaker one still
//    there once the incident closes, it opens an incident of its own;
//  - a switch found down after some of its cables were: those incidents were it, seen
//    in part, and fold into it; its cables seen without carrier as it comes back are
//    still its incident.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ops/inventory.h"
#include "ops/localize.h"

namespace xm::ops {

struct Incident {
  int64_t id = 0;
  double opened_at = 0, last_seen = 0, closed_at = 0;  // unix seconds; closed 0: open
  Finding finding;
  std::string healed_fault;  // the class healing last acted on
  double healed_at = 0;      // when it first drained or advised; 0: not yet
  std::string heal;          // what it did, in words
};

// One evaluation's findings at `now` into `incidents`; every change also to `log` (may
// be null).
void track(std::vector<Incident>& incidents, const std::vector<Finding>& findings, double now, double clear_after_s,
           IncidentLog* log);

}  // namespace xm::ops
