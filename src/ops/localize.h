// Naming the faulty component from what the agents report (ops/agent.h, read back from
// Prometheus) and the plan: which cable, port, NIC or switch, and what is wrong with it.
//
// First the counters, which are exact where they speak: a port administratively down (a
// NIC down, or a switch port shut), a cable without carrier while both ends are up, a
// switch all of whose cables are down, a cable whose carrier changed 3 or more times a
// minute (flapping), an MTU other than the plan's, a cable running slower than planned
// (degraded). Probes whose paths cross a cable so explained are explained with it.
//
// Then the probes, for faults counters do not see (random loss, black holes): each
// probe's request and reply paths (probe_paths.h) cross known directed links; the link
// whose probes' losses are least likely under a healthy fabric (a binomial likelihood
// ratio against a background loss rate) is blamed, its probes' losses are explained, and
// the next is sought until none is significant — a greedy maximum-likelihood cover, as
// tomography without the linear algebra. A link is not blamed while another that shares
// its lossy flows explains them nearly as well (within `margin`) and would not be needed
// after it: a few early losses can favour the wrong one of two, and a second's evidence
// more tells them apart. The blamed link's flows tell the class apart:
// some 5-tuples lose every probe and the others none (a black hole), or all lose alike
// (random loss).
//
// What is not the network: a host whose agent probes late (starved of CPU) or does not
// answer its scrape is a host finding, and probes from or to it are no evidence; a cable
// whose sender's queue drops packets for being full is congested, and probes crossing it
// are no evidence either: their losses are the congestion's, on it or on any other link
// they share. A cable that is merely full loses nothing to it (its queue holds the
// bursts): a loss there is a fault, which is when it matters most. Nor is a flow whose replies come
// back after the timeout: the network delivered them, late — queues or a starved peer.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "ops/probe_paths.h"

namespace xm::ops {

struct PortHealth {  // a port as its device's agent last reported it
  bool admin_up = true, oper_up = true;
  uint32_t mtu = 0;
  double speed_bps = 0;        // 0: unknown
  double carrier_changes = 0;  // within the flap window
  double queue_drops = 0;      // dropped by its queue, full (congestion), over the probes' window
};

struct DeviceHealth {
  bool scraped = false;  // its agent answered Prometheus's last scrape
  double lag_s = 0;      // how late its probes leave, mean over the window
};

struct FlowCount {
  double sent = 0, lost = 0;  // over the window
  double late = 0;            // of the lost, answered after the timeout
  double lost_in_a_row = 0;   // now: its latest probes, lost one after another
};

struct Evidence {
  std::vector<ProbeFlow> flows;
  std::vector<ProbePath> paths;   // by flow
  std::vector<FlowCount> counts;  // by flow
  std::map<Endpoint, PortHealth> ports;  // the ports whose device's agent answered
  std::map<std::string, DeviceHealth> devices;
  std::map<uint32_t, double> planned_bps;  // per cable id: the rate it should run at
  // By flow: its path crossed a cable the counters named a fault on, within the window
  // (and a few seconds more, while routing settles): its losses are that fault's, even
  // once the counters look well again or routing has moved the flow elsewhere.
  std::vector<bool> settled;
};

struct LocalizeOptions {
  double flaps = 3;             // down-up cycles within the flap window
  double max_lag_s = 0.1;       // a host whose probes leave later is starved
  double background_loss = 1e-4;
  double min_score = 15;        // log-likelihood ratio, nats
  double margin = 3;            // nats (odds of 20:1) by which the blamed link must out-explain one
                                // that shares its lossy flows
  double min_lost = 3;
  // Probes a flow has lost one after another, now, that random loss does not give two
  // flows at once (at 5 % loss one flow has a run of 4 one time in 160,000) and a
  // black hole gives every 5-tuple it catches within half a second at the fast rate.
  double in_a_row = 4;
  double degraded = 0.9;        // of the planned rate
};

struct Finding {
  std::string component;  // "tor1:spine0 -> spine0:tor1", "h3/nic1 - tor1:h3-nic1", "h3/nic1", "tor1", "h3"
  std::string fault;      // link-down, nic-down, port-down, switch-down, flapping, mtu, degraded, loss,
                          // blackhole; host: agent-starved, agent-down
  bool network = true;    // false: a host problem
  std::string evidence;   // in words
  std::vector<uint32_t> cables;  // the plan's cables it concerns
  bool from_counters = false;    // named by the counters, not the probes
  // Loss whose class may yet sharpen: no flow through the link has lost a third of its
  // probes, and none has lost two or each of the last two, as in the first second of a
  // black hole (every 5-tuple it catches has lost its one probe, or the first few of
  // the fast rate).
  bool may_sharpen = false;
  bool operator==(const Finding&) const = default;
};

std::vector<Finding> localize(const FabricPlan& plan, const Evidence& evidence, const LocalizeOptions& options = {});

}  // namespace xm::ops
