// 007 and NetBouncer run on the controller's own probe evidence: the snapshots of
// `GET /api/probes` (one JSON document a line, as bench/locate_accuracy.py --peers records
// them), so that the published algorithms and ours decide on exactly the same data.
// Written from the papers' descriptions:
//
//   007 (Arzani et al., NSDI'18): every flow that lost packets votes, 1/h for each of the h
//   links on its path. The most-voted link is blamed, the flows through it withdraw their
//   votes (they are explained), and the next is sought while a link holds at least
//   --min-votes (default 1: one flow's whole vote; the threshold is ours).
//
//   NetBouncer (Tan et al., NSDI'19): a path's success rate is the product of its links'
//   (y_p = prod x_l); x is fitted by coordinate descent on
//   sum_p (y_p - prod_{l in p} x_l)^2 + lambda * sum_l x_l (1 - x_l), x in [0, 1]
//   (lambda 0.01, at most 100 sweeps), and links with x_l < 1 - 0.001 are blamed.
//
// A flow's path is its request's links and its reply's; flows the controller marked
// settled (their losses explained by a fault the counters named) and flows whose path was
// not traced whole are left out, as the controller leaves them out. A cable is blamed
// when either direction is. Prints one JSON line per snapshot and window:
//   {"at": unix seconds, "window": seconds, "007": [cables], "netbouncer": [cables]}
//
//   locate_peers [--min-votes 1] [--lambda 0.01] [--threshold 0.001] < probes.jsonl
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Path {
  std::vector<uint32_t> links;  // directed links, each once
  double sent = 0, lost = 0;
};

struct Options {
  double min_votes = 1;
  double lambda = 0.01;
  double threshold = 0.001;
  int sweeps = 100;
};

std::set<uint32_t> blame_007(const std::vector<Path>& paths, const Options& o) {
  std::vector<const Path*> failed;
  for (const Path& p : paths)
    if (p.lost >= 0.5 && !p.links.empty()) failed.push_back(&p);  // increase() is extrapolated: 0.97 is one probe
  std::map<uint32_t, double> votes;
  for (const Path* p : failed)
    for (uint32_t l : p->links) votes[l] += 1.0 / double(p->links.size());
  std::set<uint32_t> blamed;
  std::vector<bool> explained(failed.size(), false);
  while (true) {
    auto top = std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (top == votes.end() || top->second < o.min_votes - 1e-9) break;
    const uint32_t link = top->first;
    blamed.insert(link);
    for (size_t i = 0; i < failed.size(); ++i) {
      if (explained[i] || std::find(failed[i]->links.begin(), failed[i]->links.end(), link) == failed[i]->links.end()) continue;
      explained[i] = true;
      for (uint32_t l : failed[i]->links) votes[l] -= 1.0 / double(failed[i]->links.size());
    }
    votes.erase(link);
  }
  return blamed;
}

std::set<uint32_t> blame_netbouncer(const std::vector<Path>& paths, const Options& o) {
  uint32_t links = 0;
  for (const Path& p : paths)
    for (uint32_t l : p.links) links = std::max(links, l + 1);
  std::vector<std::vector<size_t>> through(links);  // by link: the paths crossing it
  std::vector<double> y;
  std::vector<const Path*> used;
  for (const Path& p : paths) {
    if (p.sent <= 0 || p.links.empty()) continue;
    for (uint32_t l : p.links) through[l].push_back(used.size());
    y.push_back(std::clamp(1.0 - p.lost / p.sent, 0.0, 1.0));
    used.push_back(&p);
  }
  std::vector<double> x(links, 1.0);
  auto others = [&](size_t p, uint32_t skip) {  // the product of the path's other links
    double c = 1;
    for (uint32_t k : used[p]->links)
      if (k != skip) c *= x[k];
    return c;
  };
  for (int sweep = 0; sweep < o.sweeps; ++sweep) {
    double moved = 0;
    for (uint32_t l = 0; l < links; ++l) {
      if (through[l].empty()) continue;
      double cc = 0, cy = 0;
      for (size_t p : through[l]) {
        const double c = others(p, l);
        cc += c * c, cy += c * y[p];
      }
      // d/dx [sum (y - x c)^2 + lambda x (1 - x)] = 0  =>  x (2 cc - 2 lambda) = 2 cy - lambda
      double next;
      const double den = 2 * cc - 2 * o.lambda;
      if (den > 0) {
        next = std::clamp((2 * cy - o.lambda) / den, 0.0, 1.0);
      } else {  // concave in x: the better end
        auto f = [&](double v) { return cc * v * v - 2 * cy * v + o.lambda * v * (1 - v); };
        next = f(0) < f(1) ? 0.0 : 1.0;
      }
      moved = std::max(moved, std::fabs(next - x[l]));
      x[l] = next;
    }
    if (moved < 1e-9) break;
  }
  std::set<uint32_t> blamed;
  for (uint32_t l = 0; l < links; ++l)
    if (!through[l].empty() && x[l] < 1 - o.threshold) blamed.insert(l);
  return blamed;
}

nlohmann::json cable_names(const std::set<uint32_t>& links, const nlohmann::json& cables) {
  std::set<std::string> names;
  for (uint32_t l : links)
    if (l / 2 < cables.size()) names.insert(cables[l / 2].get<std::string>());
  return nlohmann::json(names);
}

int usage(const char* why) {
  std::fprintf(stderr, "locate_peers: %s\nusage: locate_peers [--min-votes V] [--lambda L] [--threshold T] < probes.jsonl\n", why);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) return usage(("missing the value of " + std::string(argv[i])).c_str());
    char* end = nullptr;
    const double v = std::strtod(argv[i + 1], &end);
    if (end == argv[i + 1] || *end != '\0' || !(v >= 0)) return usage(("not a number: " + std::string(argv[i + 1])).c_str());
    if (!std::strcmp(argv[i], "--min-votes")) o.min_votes = v;
    else if (!std::strcmp(argv[i], "--lambda")) o.lambda = v;
    else if (!std::strcmp(argv[i], "--threshold")) o.threshold = v;
    else return usage(("unknown option " + std::string(argv[i])).c_str());
    ++i;
  }
  std::string line;
  size_t number = 0;
  while (std::getline(std::cin, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json s = nlohmann::json::parse(line, nullptr, false);
    if (s.is_discarded() || !s.contains("flows") || !s.contains("cables") || !s.contains("windows_seconds")) {
      std::fprintf(stderr, "locate_peers: line %zu: not a /api/probes snapshot\n", number);
      return 1;
    }
    if (s["evaluated_at"].is_null()) continue;
    const nlohmann::json& windows = s["windows_seconds"];
    for (size_t w = 0; w < windows.size(); ++w) {
      std::vector<Path> paths;
      for (const nlohmann::json& f : s["flows"]) {
        if (!f["complete"].get<bool>() || f["settled"].get<bool>()) continue;
        Path p;
        for (uint32_t l : f["links"].get<std::vector<uint32_t>>())
          if (std::find(p.links.begin(), p.links.end(), l) == p.links.end()) p.links.push_back(l);
        p.sent = f["sent"][w].get<double>();
        p.lost = f["lost"][w].get<double>();
        paths.push_back(std::move(p));
      }
      nlohmann::json out{{"at", s["evaluated_at"]},
                         {"window", windows[w]},
                         {"007", cable_names(blame_007(paths, o), s["cables"])},
                         {"netbouncer", cable_names(blame_netbouncer(paths, o), s["cables"])}};
      std::cout << out.dump() << "\n";
    }
  }
  return 0;
}
