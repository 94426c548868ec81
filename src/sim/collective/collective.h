// Collectives as simulator traffic: the schedules xccl itself would run for a cluster and
// a rank placement (src/sched/), replayed step for step on the fabric.
//
// Each rank is an accelerator; it reaches other servers through its NIC (`rails: own`,
// the spec's accelerator-to-NIC mapping) or striped over several (`rails: all` or a list,
// as xccl's TCP transport stripes a rank's bytes over its host's NICs), and the other
// accelerators of its server through the intra-server switch. Every matched send and
// receive of the schedules becomes a message: one flow per rail it is striped over. It
// starts once the sender's step could start (its `after` steps done; the receiver
// buffers what comes early, as xccl's FIFOs and sockets do) and sends once the previous
// message on its connection has been sent (a connection is in order). A receive
// completes when its message has arrived and its own `after` steps are done. Copies take
// no time; a relay forwards a chunk once it has all arrived.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sched/schedule.h"
#include "sched/tuner.h"
#include "sim/flow.h"
#include "sim/topology.h"
#include "sim/units.h"
#include "util/result.h"

namespace xm::sim {

// One collective of a scenario, as its `collective:` traffic item says.
struct CollectiveOptions {
  std::string name;  // for `after` and the reports; default "collective<index>"
  sched::Collective op = sched::Collective::kAllReduce;
  uint64_t bytes = 16 << 20;  // nccl-tests' size: the buffer (all-gather: its output,
                              // reduce-scatter: its input, all-to-all: all blocks)
  sched::DataType type = sched::DataType::kFloat32;
  sched::Algorithm algorithm = sched::Algorithm::kDefault;  // kDefault: the tuner's choice
  uint64_t chunk_bytes = 0;                                 // 0: the tuner's grain
  // The ranks: accelerators [first_local, first_local + per_server) of servers
  // [first_server, first_server + servers), numbered server by server (as launchers do).
  // 0: every server from first_server; every accelerator from first_local.
  // server_stride: servers first_server, first_server + stride, ... (a pipeline's stages,
  // a data-parallel group across pipelines).
  uint32_t first_server = 0, servers = 0, first_local = 0, per_server = 0, server_stride = 1;
  // Which NICs carry a rank's bytes to other servers: its own (empty), or striped over
  // these rails of its server (`all`: every rail).
  std::vector<uint32_t> rails;
  bool all_rails = false;
  Time start;                      // when it may begin (and after `after`)
  std::vector<std::string> after;  // collectives that must have finished first
};

// Where the ranks are, on the simulated topology.
struct Placement {
  sched::RankLayout layout;
  std::vector<uint32_t> home;                // per rank: the NIC host standing for it
  std::vector<std::vector<uint32_t>> nics;   // per rank: the hosts it sends to other servers on
};

// The ranks of `c` on `t`; an error names the field when the spec lacks what they need
// (more ranks than accelerators, a rail no NIC is on, ranks of one server that share a
// NIC and talk to each other).
Result<Placement> place(const CollectiveOptions& c, const SimTopology& t);

// The tuner's view of the simulated cluster: shared memory is the intra-server fabric, a
// rail the ranks' NICs, cross-rail the NICs slowed by the ToRs' oversubscription.
sched::Tuning tuning_for(const CollectiveOptions& c, const Placement& p, const SimTopology& t);

// A replayed collective: its flows are [first_flow, first_flow + flows.size()) of the
// scenario, in dependency order.
struct ReplayedFlow {
  uint32_t src_rank = 0, dst_rank = 0;
  uint32_t rail = 0;   // the sender NIC's rail; UINT32_MAX inside a server
};
struct CollectiveReplay {
  CollectiveOptions options;
  std::string algorithm;  // what the schedules say they run ("ring", "pxn", ...)
  uint64_t chunk_bytes = 0;
  int ranks = 0;
  uint64_t steps = 0;     // over every rank's schedule
  uint32_t first_flow = 0;
  std::vector<ReplayedFlow> flows;
  std::vector<uint32_t> last_flows;  // flow ids nothing of this collective waits for
};

// Appends the flows of `c` to `out` (their ids follow out.size()). `wait_for`: flows that
// must be received before any of them starts (the collectives named in `after`).
Result<CollectiveReplay> replay_collective(const CollectiveOptions& c, const SimTopology& t,
                                           const std::vector<uint32_t>& wait_for, std::vector<FlowSpec>& out);

}  // namespace xm::sim
