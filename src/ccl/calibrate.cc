#include "ccl/calibrate.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace xm::ccl {
namespace {

constexpr int kRounds = 20;  // small messages in a chain
constexpr int kTrials = 3;

struct Timing {
  double chain_us = 0, bulk_us = 0;
};

// This rank's part of one pattern: sends to `next`, receives from `prev`.
Result<Timing> time_pattern(const CalibrationContext& c, int next, int prev, size_t bulk_bytes,
                            std::vector<std::byte>& out, std::vector<std::byte>& in) {
  CollectiveArgs args;
  args.type = DataType::kUint8;
  args.rank = c.rank;
  args.ranks = int(c.links.size());
  ExecBuffers b{nullptr, nullptr, nullptr, {out.data(), in.data()}};
  auto run = [&](int rounds, size_t bytes) -> Result<double> {
    Schedule s;
    uint32_t last = kNoStep;
    for (int t = 0; t < rounds; ++t) {
      s.add(send_step(next, bytes, {Buffer::kUser, 0}, after_step(last)));
      last = s.add(recv_step(prev, bytes, {Buffer::kUser + 1, 0}));
    }
    Plan plan(std::move(s), args.ranks);
    auto start = net::Clock::now();
    if (Status st = c.executor->run(plan, args, b, c.links, c.options); !st) return Error{st.message()};
    return std::chrono::duration<double, std::micro>(net::Clock::now() - start).count();
  };
  if (Result<double> warm = run(2, 8); !warm) return warm.error();  // first touch of the path
  // The best of a few tries: ranks start unevenly and the first tries wait on the
  // slowest, which is not what a collective in a running job sees.
  Timing best{1e300, 1e300};
  for (int trial = 0; trial < kTrials; ++trial) {
    Result<double> chain = run(kRounds, 8);
    if (!chain) return chain.error();
    Result<double> bulk = run(1, bulk_bytes);
    if (!bulk) return bulk.error();
    best.chain_us = std::min(best.chain_us, *chain);
    best.bulk_us = std::min(best.bulk_us, *bulk);
  }
  return best;
}

}  // namespace

Result<CostModel> calibrate(const CalibrationContext& c) {
  const RankLayout& lay = *c.layout;
  const int L = lay.uniform_local_size(), H = lay.hosts();
  const int h = lay.host_of[c.rank], l = lay.local_of[c.rank];
  CostModel model;
  if (L == 0 || int(c.links.size()) < 2) return model;  // uneven hosts: no model, defaults apply
  struct Pattern {
    LinkCost* cost;
    int next, prev;
    size_t bulk;
  };
  std::vector<Pattern> patterns;
  if (L > 1) patterns.push_back({&model.shm, lay.rank_at(h, (l + 1) % L), lay.rank_at(h, (l + L - 1) % L), 4 << 20});
  // Networks: 512 KiB is enough to see the rate (TCP ramps within it on these paths)
  // and keeps the start-up traffic small.
  if (H > 1) patterns.push_back({&model.rail, lay.rank_at((h + 1) % H, l), lay.rank_at((h + H - 1) % H, l), 512 << 10});
  if (H > 1 && L > 1)
    patterns.push_back({&model.cross, lay.rank_at((h + 1) % H, (l + 1) % L), lay.rank_at((h + H - 1) % H, (l + L - 1) % L),
                        512 << 10});
  std::vector<std::byte> out(4 << 20), in(4 << 20);
  std::ostringstream mine;
  for (const Pattern& p : patterns) {
    Result<Timing> t = time_pattern(c, p.next, p.prev, p.bulk, out, in);
    if (!t) return Error{"calibrating the tuner: " + t.error().message};
    char line[64];
    std::snprintf(line, sizeof line, "%.3f %.3f ", t->chain_us, t->bulk_us);
    mine << line;
  }
  Result<std::vector<std::string>> all = c.bootstrap->allgather(mine.str(), c.deadline);
  if (!all) return all.error();
  // The median rank's figures, computed the same way on every rank.
  std::vector<std::vector<double>> chain(patterns.size()), bulk(patterns.size());
  for (const std::string& blob : *all) {
    std::istringstream fields(blob);
    for (size_t i = 0; i < patterns.size(); ++i) {
      Timing t;
      if (!(fields >> t.chain_us >> t.bulk_us)) return Error{"calibrating the tuner: a rank sent malformed timings"};
      chain[i].push_back(t.chain_us);
      bulk[i].push_back(t.bulk_us);
    }
  }
  auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  for (size_t i = 0; i < patterns.size(); ++i) {
    double latency = median(chain[i]) / kRounds;
    patterns[i].cost->latency_us = latency;
    patterns[i].cost->bytes_per_us = double(patterns[i].bulk) / std::max(1.0, median(bulk[i]) - latency);
  }
  return model;
}

}  // namespace xm::ccl
