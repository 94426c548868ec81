// A schedule: what one rank does in one collective, as ordered steps over buffers.
//
// The schedules layer: algorithms (algorithms/) produce schedules and know nothing of
// transports or simulators; xccl's executor (src/ccl/executor.h) runs them over real
// links, and the simulator (src/sim/collective/) replays them on a modelled fabric. A schedule is a pure function of (collective, count, type,
// rank, ranks, options).
//
// Step semantics, all counts in elements:
//   kSend        send   src[offset, +count) to `peer` (`pull`: the receiver copies them)
//   kRecv        recv   from `peer` into dst[offset, +count)
//   kRecvReduce  recv   from `peer`, dst[...] = src[...] op incoming; then, if
//                `finalize`, apply the op's last touch (avg: divide by ranks)
//   kCopy        local  dst[...] = src[...]  (no peer)
//   kRecvReduceSend  as kRecvReduce, and the result is sent on to `to` as it is made;
//                when `forward_only`, dst need not be written (it is only where the
//                result may be staged on its way)
//   kRecvCopySend    as kRecv, and the bytes are sent on to `to` as they arrive
// The relays (NCCL's recvReduceSend / recvCopySend) touch each byte once where a
// receive followed by a send would touch it twice. A step starts once every step in
// `after` has completed. Steps with the same peer and direction are matched with the
// peer's in schedule order (links are FIFOs), so a schedule's sends to p must list in
// the order p's receives from this rank do; a relay counts as a receive from `peer`
// and a send to `to`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "sched/rank_layout.h"
#include "sched/types.h"

namespace xm::sched {

// Which buffer a region is in: the collective's input, output, the runtime's scratch,
// or (point-to-point groups) the k-th user buffer, kUser + k.
using BufferId = uint16_t;
struct Buffer {
  static constexpr BufferId kInput = 0, kOutput = 1, kScratch = 2, kUser = 3;
};

struct Region {
  BufferId buffer = Buffer::kInput;
  uint64_t offset = 0;  // elements
};

enum class StepKind : uint8_t { kSend, kRecv, kRecvReduce, kCopy, kRecvReduceSend, kRecvCopySend };

struct Step {
  StepKind kind;
  int peer = -1;          // rank; -1 for kCopy
  uint64_t count = 0;     // elements
  Region src;             // kSend, kCopy, and the local operand of kRecvReduce
  Region dst;             // kRecv, kRecvReduce, kCopy
  bool finalize = false;  // kRecvReduce(Send): this produces the final value
  std::vector<uint32_t> after;  // indices of earlier steps this one waits for
  int to = -1;                // relays: the rank the result goes on to
  bool forward_only = false;  // kRecvReduceSend: dst is scratch space, not a result
  bool by_copy = false;       // kSend: copied into the stream even from registered memory,
                              // so it completes once buffered (relay rings need that)
  bool pull = false;          // kSend: the receiver only copies these bytes (never reduces
                              // them), so it may pull them from where they lie itself
};

// Step builders, so algorithms read as what they do.
using After = std::vector<uint32_t>;
inline Step send_step(int peer, uint64_t count, Region src, After after = {}) {
  return {StepKind::kSend, peer, count, src, {}, false, std::move(after)};
}
// A send whose receiver copies the bytes into place: a transport may let the receiver
// copy them straight out of this rank's buffer (one copy where a FIFO takes two).
inline Step pull_send_step(int peer, uint64_t count, Region src, After after = {}) {
  Step s = send_step(peer, count, src, std::move(after));
  s.pull = true;
  return s;
}
inline Step recv_step(int peer, uint64_t count, Region dst, After after = {}) {
  return {StepKind::kRecv, peer, count, {}, dst, false, std::move(after)};
}
inline Step reduce_step(int peer, uint64_t count, Region src, Region dst, bool finalize, After after = {}) {
  return {StepKind::kRecvReduce, peer, count, src, dst, finalize, std::move(after)};
}
inline Step reduce_send_step(int peer, int to, uint64_t count, Region src, Region dst, bool finalize,
                             bool forward_only, After after = {}) {
  return {StepKind::kRecvReduceSend, peer, count, src, dst, finalize, std::move(after), to, forward_only};
}
inline Step copy_send_step(int peer, int to, uint64_t count, Region dst, After after = {}) {
  return {StepKind::kRecvCopySend, peer, count, {}, dst, false, std::move(after), to, false};
}
inline Step copy_step(uint64_t count, Region src, Region dst, After after = {}) {
  return {StepKind::kCopy, -1, count, src, dst, false, std::move(after)};
}
// `after` for "wait for step i", where i may be kNoStep (nothing to wait for).
inline constexpr uint32_t kNoStep = UINT32_MAX;
inline After after_step(uint32_t i) { return i == kNoStep ? After{} : After{i}; }

struct Schedule {
  std::vector<Step> steps;
  uint64_t scratch_elements = 0;  // scratch buffer the schedule needs
  bool scratch_shared = false;    // peers read scratch in place: it must be registered memory
  bool output_write_only = false;  // no step reads the output (out of place): see executor.h
  std::string algorithm;          // for logs: "ring", "pairwise", ...

  // Appends and returns the new step's index.
  uint32_t add(Step step) {
    steps.push_back(std::move(step));
    return uint32_t(steps.size() - 1);
  }
};

// In-memory links pass sends at least this large by descriptor when their bytes lie in
// registered memory (the receiver reads them in place); smaller ones are copied. The
// direct schedules stage through scratch from this size on, the tuner offers two-shot.
inline constexpr size_t kZeroCopyMinBytes = 16 << 10;

enum class Collective : uint8_t {
  kAllReduce, kBroadcast, kReduce, kAllGather, kReduceScatter, kAllToAll,
};
const char* to_string(Collective c);

// The algorithms a collective can run with (not every one applies to every
// collective; make_schedule falls back to the collective's default).
enum class Algorithm : uint8_t {
  kDefault,            // ring (all-reduce: ring-relay where relays apply), pairwise, chain
  kRing,
  kRingRelay,          // all-reduce over shared memory, plain buffers
  kHierarchical,       // all-reduce: inside hosts, then per rail across hosts
  kRecursiveDoubling,  // all-reduce, small messages
  kPairwise,           // all-to-all
  kPxn,                // all-to-all: through the local rank on the receiver's rail
  kTwoShot,            // all-reduce over shared memory: stage, sum in place, copy out
  kDirect,             // all-gather, reduce-scatter over shared memory: every block to its peers at once
  kTree,               // all-reduce: a double binary tree, log-depth
  kHierarchicalTree,   // all-reduce: inside hosts, then a double binary tree per rail across hosts
};
inline constexpr int kAlgorithms = int(Algorithm::kHierarchicalTree) + 1;  // keep with the last one
const char* to_string(Algorithm a);

// What a collective call asks for, as the algorithms see it. `count` is per rank as in
// NCCL: all-gather's input (output is count × ranks), reduce-scatter's output (input
// is count × ranks), all-to-all's per-peer block.
struct CollectiveArgs {
  Collective collective = Collective::kAllReduce;
  uint64_t count = 0;
  DataType type = DataType::kFloat32;
  RedOp op = RedOp::kSum;
  int root = 0;
  int rank = 0;
  int ranks = 1;
  bool in_place = false;          // input and output are the same memory
  uint64_t chunk_bytes = 512 << 10;  // pipelining grain
  // Every link writes in place and a chunk fits in the receiver's FIFO even while the
  // receiver waits (shared memory, chunk at most a quarter of the FIFO): rings may use
  // relay steps.
  bool relays = false;
  // Every peer shares memory with this rank (two-shot, direct apply).
  bool shared_memory = false;
  // Where the ranks are (hosts, local index); null: treat as one host. Not owned.
  const RankLayout* layout = nullptr;
  Algorithm algorithm = Algorithm::kDefault;  // the tuner's (or the user's) choice
};

// Elements in one rank's output.
inline uint64_t output_count(const CollectiveArgs& a) {
  switch (a.collective) {
    case Collective::kAllGather: case Collective::kAllToAll: return a.count * uint64_t(a.ranks);
    default: return a.count;
  }
}

// nccl-tests' bus bandwidth factor: busbw = algbw × this, so that a collective that runs
// at the links' speed shows it whatever the number of ranks.
inline double bus_factor(Collective c, int ranks) {
  switch (c) {
    case Collective::kAllReduce: return 2.0 * (ranks - 1) / ranks;
    case Collective::kAllGather: case Collective::kReduceScatter: case Collective::kAllToAll: return double(ranks - 1) / ranks;
    default: return 1.0;
  }
}

// The schedule for `args` with `args.algorithm` (the collective's default when that
// algorithm does not apply).
Schedule make_schedule(const CollectiveArgs& args);

}  // namespace xm::sched
