// From every rank's schedule to flows: pair each send with its receive, find what each
// message waits for, and list the messages so that nothing precedes what it waits for.
#include <algorithm>
#include <tuple>
#include <unordered_map>

#include "sim/collective/collective.h"

namespace xm::sim {
namespace {

using sched::Schedule;
using sched::Step;
using sched::StepKind;

constexpr uint32_t kNone = UINT32_MAX;

bool sends(const Step& s) {
  return s.kind == StepKind::kSend || s.kind == StepKind::kRecvReduceSend || s.kind == StepKind::kRecvCopySend;
}
int sends_to(const Step& s) { return s.kind == StepKind::kSend ? s.peer : s.to; }
bool receives(const Step& s) { return s.kind != StepKind::kSend && s.kind != StepKind::kCopy; }
bool relays(const Step& s) { return s.kind == StepKind::kRecvReduceSend || s.kind == StepKind::kRecvCopySend; }

// One message: a send step of `src` and the receive step of `dst` it pairs with.
struct Message {
  uint32_t src, send_step, dst, recv_step;
  uint64_t bytes;
};

// The replay as a graph of nodes: messages [0, messages), then barriers, each waiting
// for other nodes. A barrier stands where a step completes only once several things
// have (a receive whose own `after` steps must be done too; a copy of several inputs).
class Replay {
 public:
  Replay(const std::vector<Schedule>& schedules, uint64_t element_bytes)
      : s_(schedules), element_bytes_(element_bytes) {}

  // Pairs sends and receives: the k-th send from a to b is b's k-th receive from a.
  Status pair_up() {
    const uint64_t n = s_.size();
    struct End {
      uint64_t pair;
      uint32_t step, rank;
    };
    std::vector<End> out, in;
    out_of_.resize(n), in_of_.resize(n);
    for (uint32_t r = 0; r < n; ++r) {
      out_of_[r].assign(s_[r].steps.size(), kNone), in_of_[r].assign(s_[r].steps.size(), kNone);
      for (uint32_t i = 0; i < s_[r].steps.size(); ++i) {
        const Step& st = s_[r].steps[i];
        if (sends(st)) out.push_back({r * n + uint64_t(sends_to(st)), i, r});
        if (receives(st)) in.push_back({uint64_t(st.peer) * n + r, i, r});
      }
    }
    auto order = [](const End& a, const End& b) { return std::tie(a.pair, a.step) < std::tie(b.pair, b.step); };
    std::sort(out.begin(), out.end(), order);
    std::sort(in.begin(), in.end(), order);
    if (out.size() != in.size()) return Error{"the schedules do not pair up: " + std::to_string(out.size()) +
                                              " sends, " + std::to_string(in.size()) + " receives"};
    for (size_t k = 0; k < out.size(); ++k) {
      const End& a = out[k];
      const End& b = in[k];
      const uint64_t count = s_[a.rank].steps[a.step].count;
      if (a.pair != b.pair || count != s_[b.rank].steps[b.step].count)
        return Error{"the schedules do not pair up: rank " + std::to_string(a.rank) + " step " +
                     std::to_string(a.step) + " has no matching receive"};
      out_of_[a.rank][a.step] = in_of_[b.rank][b.step] = uint32_t(messages_.size());
      messages_.push_back({a.rank, a.step, b.rank, b.step, count * element_bytes_});
    }
    waits_.resize(messages_.size());
    return Status::Ok();
  }

  // What each step's completion is (a node, or kNone for nothing to wait for), and what
  // each message waits for. A message leaves once its sender's step may start (its
  // `after` steps done; a relay's chunk also in): the receiver buffers what comes early,
  // as a transport's FIFO or socket does. A receive completes when its message has
  // arrived and its own `after` steps are done.
  void link() {
    std::vector<std::vector<uint32_t>> done(s_.size());
    std::vector<uint32_t> before;
    for (uint32_t r = 0; r < s_.size(); ++r) {
      done[r].assign(s_[r].steps.size(), kNone);
      for (uint32_t k = 0; k < s_[r].steps.size(); ++k) {  // `after` names earlier steps only
        const Step& st = s_[r].steps[k];
        before.clear();
        for (uint32_t d : st.after)
          if (done[r][d] != kNone) before.push_back(done[r][d]);
        if (sends(st)) {
          std::vector<uint32_t>& w = waits_[out_of_[r][k]];
          w.insert(w.end(), before.begin(), before.end());
          if (relays(st)) w.push_back(in_of_[r][k]);
          done[r][k] = out_of_[r][k];
        } else {
          if (st.kind != StepKind::kCopy) before.push_back(in_of_[r][k]);
          done[r][k] = join(before, r);
        }
      }
      done[r] = {};  // a rank's steps wait only on its own
    }
    for (std::vector<uint32_t>& w : waits_) {
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
    }
    out_of_ = {}, in_of_ = {};  // steps are done with: only the nodes remain
  }

  // The message before `m` on its connection (the same sender and receiver), or kNone:
  // messages of a pair have consecutive ids, in the sender's order.
  uint32_t previous_on_connection(uint32_t m) const {
    if (m == 0 || m >= messages_.size()) return kNone;
    const Message& a = messages_[m - 1];
    const Message& b = messages_[m];
    return a.src == b.src && a.dst == b.dst ? m - 1 : kNone;
  }

  // Nodes in an order where each follows all it waits for and its connection's previous
  // message (Kahn's algorithm); error if some wait on each other.
  Result<std::vector<uint32_t>> order() const {
    const size_t nodes = waits_.size();
    std::vector<uint32_t> pending(nodes), begin(nodes + 1, 0), waiting;
    auto before = [&](uint32_t m, auto&& visit) {
      for (uint32_t d : waits_[m]) visit(d);
      if (const uint32_t p = previous_on_connection(m); p != kNone) visit(p);
    };
    for (uint32_t m = 0; m < nodes; ++m) before(m, [&](uint32_t d) { ++begin[d + 1]; });
    for (size_t m = 0; m < nodes; ++m) begin[m + 1] += begin[m];
    waiting.resize(begin.back());
    std::vector<uint32_t> fill(begin.begin(), begin.end() - 1), ready, out;
    for (uint32_t m = 0; m < nodes; ++m) {
      before(m, [&](uint32_t d) { waiting[fill[d]++] = m, ++pending[m]; });
      if (pending[m] == 0) ready.push_back(m);
    }
    while (!ready.empty()) {
      const uint32_t m = ready.back();
      ready.pop_back();
      out.push_back(m);
      for (uint32_t k = begin[m]; k < begin[m + 1]; ++k)
        if (--pending[waiting[k]] == 0) ready.push_back(waiting[k]);
    }
    if (out.size() != nodes) return Error{"the schedules wait on each other (a deadlock)"};
    return out;
  }

  size_t nodes() const { return waits_.size(); }
  bool is_message(uint32_t node) const { return node < messages_.size(); }
  const Message& message(uint32_t node) const { return messages_[node]; }
  const std::vector<uint32_t>& waits(uint32_t node) const { return waits_[node]; }
  uint32_t barrier_rank(uint32_t node) const { return barrier_rank_[node - messages_.size()]; }

 private:
  // One node that completes when all of `nodes` have (a barrier of `rank`'s): the node
  // itself if there is one.
  uint32_t join(std::vector<uint32_t>& nodes, uint32_t rank) {
    std::sort(nodes.begin(), nodes.end());
    nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
    if (nodes.empty()) return kNone;
    if (nodes.size() == 1) return nodes[0];
    barrier_rank_.push_back(rank);
    waits_.push_back(nodes);
    return uint32_t(waits_.size() - 1);
  }

  const std::vector<Schedule>& s_;
  uint64_t element_bytes_;
  std::vector<Message> messages_;
  std::vector<std::vector<uint32_t>> out_of_, in_of_;  // per rank, per step: its message
  std::vector<std::vector<uint32_t>> waits_;           // per node
  std::vector<uint32_t> barrier_rank_;                 // per barrier
};

bool scaled(sched::Collective c) {  // nccl-tests' size is the whole of what every rank holds
  return c == sched::Collective::kAllGather || c == sched::Collective::kReduceScatter ||
         c == sched::Collective::kAllToAll;
}

}  // namespace

Result<CollectiveReplay> replay_collective(const CollectiveOptions& c, const SimTopology& t,
                                           const std::vector<uint32_t>& wait_for, std::vector<FlowSpec>& out) {
  Result<Placement> placed = place(c, t);
  if (!placed) return placed.error();
  const Placement& p = *placed;
  const int n = int(p.home.size());
  const uint64_t element = sched::size_of(c.type);
  const uint64_t count = c.bytes / element / (scaled(c.op) ? uint64_t(n) : 1);
  if (count == 0)
    return Error{"bytes: " + std::to_string(c.bytes) + " is less than one " + sched::to_string(c.type) +
                 " per rank of " + std::to_string(n)};
  const sched::Tuning tuning = tuning_for(c, p, t);

  CollectiveReplay replay;
  replay.options = c;
  replay.ranks = n;
  replay.first_flow = uint32_t(out.size());
  std::vector<Schedule> schedules(n);
  for (int r = 0; r < n; ++r) {
    sched::CollectiveArgs a;
    a.collective = c.op, a.count = count, a.type = c.type, a.rank = r, a.ranks = n;
    a = sched::tuned(a, p.layout, tuning);
    schedules[r] = sched::make_schedule(a);
    replay.steps += schedules[r].steps.size();
    if (r == 0) replay.algorithm = schedules[r].algorithm, replay.chunk_bytes = a.chunk_bytes;
  }

  Replay graph(schedules, element);
  if (Status s = graph.pair_up(); !s) return Error{s.message()};
  graph.link();
  std::vector<Schedule>().swap(schedules);  // the graph has all it needs of them
  Result<std::vector<uint32_t>> order = graph.order();
  if (!order) return order.error();

  // Each node's flows, consecutive ids: a message's one per stripe, a barrier's (and a
  // message's of no bytes) one of no bytes. One 5-tuple per connection (rank pair and
  // stripe), so a connection's messages share a path as they would, and each follows
  // the one before it there (a queue pair or socket sends in order).
  std::vector<uint32_t> first(graph.nodes()), flows_of(graph.nodes(), 0);
  std::vector<char> waited_on(graph.nodes(), 0);
  struct Connection {
    uint16_t sport = 0;
    uint32_t last = UINT32_MAX;  // its latest flow so far
  };
  std::unordered_map<uint64_t, Connection> connection;
  std::vector<uint32_t> connections(t.hosts, 0);  // per host, for its source ports
  std::vector<uint32_t> after;
  out.reserve(out.size() + graph.nodes());
  replay.flows.reserve(graph.nodes());
  auto add = [&](uint32_t node, uint32_t src, uint32_t dst, uint64_t bytes, Connection* on, ReplayedFlow what) {
    if (flows_of[node]++ == 0) first[node] = uint32_t(out.size());
    FlowSpec& f = out.emplace_back();
    f.src = src, f.dst = dst, f.bytes = bytes, f.start = c.start, f.after = after;
    if (on) f.sport = on->sport, f.follows = on->last, on->last = uint32_t(out.size() - 1);
    replay.flows.push_back(what);
  };
  for (uint32_t node : *order) {
    after.clear();
    for (uint32_t d : graph.waits(node)) {
      for (uint32_t k = 0; k < flows_of[d]; ++k) after.push_back(first[d] + k);
      waited_on[d] = 1;
    }
    if (graph.waits(node).empty()) after = wait_for;
    std::sort(after.begin(), after.end());
    after.erase(std::unique(after.begin(), after.end()), after.end());
    if (!graph.is_message(node) || graph.message(node).bytes == 0) {
      const uint32_t rank = graph.is_message(node) ? graph.message(node).src : graph.barrier_rank(node);
      add(node, p.home[rank], p.home[rank], 0, nullptr, {rank, rank, UINT32_MAX});
      continue;
    }
    const Message& msg = graph.message(node);
    const bool local = p.layout.host_of[msg.src] == p.layout.host_of[msg.dst];
    const std::vector<uint32_t> one_src{p.home[msg.src]}, one_dst{p.home[msg.dst]};
    const std::vector<uint32_t>& from = local ? one_src : p.nics[msg.src];
    const std::vector<uint32_t>& to = local ? one_dst : p.nics[msg.dst];
    if (local && from[0] == to[0])
      return Error{"ranks " + std::to_string(msg.src) + " and " + std::to_string(msg.dst) + " share NIC " +
                   t.names[from[0]] + ", which stands for both in the simulation: place ranks on accelerators with NICs of their own"};
    for (size_t k = 0; k < from.size(); ++k) {
      const uint64_t share = msg.bytes * (k + 1) / from.size() - msg.bytes * k / from.size();
      if (share == 0) continue;
      auto [it, added] = connection.try_emplace((uint64_t(msg.src) * uint64_t(n) + msg.dst) * from.size() + k);
      if (added) it->second.sport = uint16_t(20000 + connections[from[k]]++ % 45000);
      add(node, from[k], to[k], share, &it->second, {msg.src, msg.dst, local ? UINT32_MAX : t.rail[from[k]]});
    }
  }
  for (uint32_t node = 0; node < graph.nodes(); ++node)
    if (!waited_on[node])
      for (uint32_t k = 0; k < flows_of[node]; ++k) replay.last_flows.push_back(first[node] + k);
  std::sort(replay.last_flows.begin(), replay.last_flows.end());
  replay.last_flows.erase(std::unique(replay.last_flows.begin(), replay.last_flows.end()), replay.last_flows.end());
  return replay;
}

}  // namespace xm::sim
