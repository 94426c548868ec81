// What a testbed looks like now: every NIC and ToR-spine link with its address, rate,
// state and byte counters, read from the kernel (`ip -s -j link` in each namespace).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

struct LinkCounters {
  bool up = false;  // carrier: both ends administratively up
  uint64_t rx_bytes = 0, tx_bytes = 0, rx_packets = 0, tx_packets = 0, tx_dropped = 0;
};

// Interface name -> counters, from `ip -s -j link show` output.
Result<std::map<std::string, LinkCounters>> parse_link_stats(const std::string& json, const std::string& source);

struct Snapshot {
  Plan plan;
  // [host][nic], the host's end of the link: tx = sent by the host.
  std::vector<std::vector<LinkCounters>> nics;
  // [uplink], as if read at the spine's end: rx = into the spine from the ToR, tx = from
  // the spine to it.
  std::vector<LinkCounters> spine;
};

// Reads every namespace of `plan`. Error when one is missing (the testbed is broken:
// `down` and `up` again).
Result<Snapshot> take_snapshot(const Plan& plan);

// For programs: hosts[].nics[] and spine.links[], each with address, rate, state and
// counters. Documented in docs/testbed.md.
std::string snapshot_json(const Snapshot& s);
// For people: one table of NICs, one of spine links.
std::string snapshot_text(const Snapshot& s);

}  // namespace xm::testbed
