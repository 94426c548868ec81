// From every rank's schedule to flows: pair each send with its receive, find what each
// message waits for, and list the messages so that nothing precedes what it waits for.
#include <algorithm>
#include <map>
#include <tuple>

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
    return Status::Ok();
  }

  // What each message waits for: the `after` steps of both its ends, and for a relay's
  // outgoing chunk, the incoming one.
  void find_waits() {
    waits_.resize(messages_.size());
    for (uint32_t m = 0; m < messages_.size(); ++m) {
      const Message& msg = messages_[m];
      std::vector<uint32_t>& w = waits_[m];
      const Step& send = s_[msg.src].steps[msg.send_step];
      for (uint32_t d : send.after) add_done(msg.src, d, w);
      if (relays(send)) w.push_back(in_of_[msg.src][msg.send_step]);
      for (uint32_t d : s_[msg.dst].steps[msg.recv_step].after) add_done(msg.dst, d, w);
      std::sort(w.begin(), w.end());
      w.erase(std::unique(w.begin(), w.end()), w.end());
    }
  }

  // Messages in an order where each follows all it waits for (Kahn's algorithm); error
  // if some wait on each other.
  Result<std::vector<uint32_t>> order() const {
    std::vector<uint32_t> pending(messages_.size());
    std::vector<std::vector<uint32_t>> waiting(messages_.size());
    std::vector<uint32_t> ready, out;
    for (uint32_t m = 0; m < messages_.size(); ++m) {
      pending[m] = uint32_t(waits_[m].size());
      for (uint32_t d : waits_[m]) waiting[d].push_back(m);
      if (pending[m] == 0) ready.push_back(m);
    }
    while (!ready.empty()) {
      const uint32_t m = ready.back();
      ready.pop_back();
      out.push_back(m);
      for (uint32_t x : waiting[m])
        if (--pending[x] == 0) ready.push_back(x);
    }
    if (out.size() != messages_.size()) return Error{"the schedules wait on each other (a deadlock)"};
    return out;
  }

  const std::vector<Message>& messages() const { return messages_; }
  const std::vector<uint32_t>& waits(uint32_t m) const { return waits_[m]; }

 private:
  // The messages whose arrival completes step `k` of `rank`: its own for a send or a
  // receive (a relay's outgoing one), and for a copy, what completes the steps it waits
  // for (copies take no time).
  void add_done(uint32_t rank, uint32_t k, std::vector<uint32_t>& w) {
    const Step& st = s_[rank].steps[k];
    if (st.kind == StepKind::kCopy) {
      auto [it, added] = copy_done_.try_emplace(uint64_t(rank) << 32 | k);
      if (added) {
        std::vector<uint32_t> done;
        for (uint32_t d : st.after) add_done(rank, d, done);
        std::sort(done.begin(), done.end());
        done.erase(std::unique(done.begin(), done.end()), done.end());
        it->second = std::move(done);
      }
      w.insert(w.end(), it->second.begin(), it->second.end());
      return;
    }
    w.push_back(sends(st) ? out_of_[rank][k] : in_of_[rank][k]);
  }

  const std::vector<Schedule>& s_;
  uint64_t element_bytes_;
  std::vector<Message> messages_;
  std::vector<std::vector<uint32_t>> out_of_, in_of_;  // per rank, per step: its message
  std::vector<std::vector<uint32_t>> waits_;           // per message
  std::map<uint64_t, std::vector<uint32_t>> copy_done_;
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
  graph.find_waits();
  Result<std::vector<uint32_t>> order = graph.order();
  if (!order) return order.error();

  // Each message's flows (empty for one of no bytes: its arrival is that of what it
  // waited for). One 5-tuple per connection: rank pair and stripe.
  const std::vector<Message>& messages = graph.messages();
  std::vector<std::vector<uint32_t>> arrives(messages.size());
  std::vector<char> waited_on(messages.size(), 0);
  std::map<std::tuple<uint32_t, uint32_t, size_t>, uint16_t> connection;
  std::vector<uint32_t> connections(t.hosts, 0);  // per host, for its source ports
  for (uint32_t m : *order) {
    const Message& msg = messages[m];
    std::vector<uint32_t> after;
    for (uint32_t d : graph.waits(m)) {
      after.insert(after.end(), arrives[d].begin(), arrives[d].end());
      waited_on[d] = 1;
    }
    if (graph.waits(m).empty()) after = wait_for;
    std::sort(after.begin(), after.end());
    after.erase(std::unique(after.begin(), after.end()), after.end());
    if (msg.bytes == 0) {
      arrives[m] = std::move(after);
      continue;
    }
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
      FlowSpec f;
      f.src = from[k], f.dst = to[k], f.bytes = share, f.start = c.start, f.after = after;
      auto [it, added] = connection.try_emplace({msg.src, msg.dst, k}, 0);
      if (added) it->second = uint16_t(20000 + connections[f.src]++ % 45000);
      f.sport = it->second;
      arrives[m].push_back(uint32_t(out.size()));
      replay.flows.push_back({msg.src, msg.dst, local ? UINT32_MAX : t.rail[f.src]});
      out.push_back(std::move(f));
    }
  }
  for (uint32_t m = 0; m < messages.size(); ++m)
    if (!waited_on[m]) replay.last_flows.insert(replay.last_flows.end(), arrives[m].begin(), arrives[m].end());
  std::sort(replay.last_flows.begin(), replay.last_flows.end());
  replay.last_flows.erase(std::unique(replay.last_flows.begin(), replay.last_flows.end()), replay.last_flows.end());
  return replay;
}

}  // namespace xm::sim
