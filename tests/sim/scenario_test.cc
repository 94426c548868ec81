// Scenario files: errors that point at the line, and a whole run with its output files.
#include "sim/scenario.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/run.h"
#include "sim_fixtures.h"

namespace xm::sim {
namespace {

namespace fs = std::filesystem;

using test::temp_dir;

void write(const fs::path& p, const std::string& text) { std::ofstream(p) << text; }

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

const char* kSpec = R"(name: tiny
servers: 8
server: {accelerators: 1, nics: 1, nic_gbps: 100}
fabric:
  kind: clos
  tor: {ports: 8, servers: 4, uplinks: 4, host_latency_ns: 1000}
  agg: {ports: 2, tors: 2, count: 4, link: {gbps: 100, latency_ns: 1000}}
)";

TEST(Scenario, ErrorsNameFileLineColumnAndField) {
  auto err = [](const char* text) { return parse_scenario(text, "s.yaml").error().message; };
  EXPECT_EQ(err("topology: {spec: a.yaml}\ntraffic:\n  - poisson: {cdf: c.txt, load: lots}\n"),
            "s.yaml:3:33: traffic[0].poisson.load: expected a number, got \"lots\"");
  EXPECT_EQ(err("topology: {spec: a.yaml}\ntraffic:\n  - poisson: {cdf: c.txt, load: 1.5}\n"),
            "s.yaml:3:33: traffic[0].poisson.load: must be in [1e-06, 1], got 1.5");
  EXPECT_EQ(err("topology: {spec: a.yaml}\nnetwork: {mtu: 1000, pfc: maybe}\ntraffic: [{permutation: {}}]\n"),
            "s.yaml:2:27: network.pfc: expected true or false");
  EXPECT_EQ(err("topology: {spec: a.yaml}\ntraffic: [{flood: {}}]\n"),
            "s.yaml:2:12: traffic[0].flood: unknown traffic; expected poisson, incast, permutation, allreduce, collective or hpcc_flows");
  EXPECT_EQ(err("topology: {spec: a.yaml}\ntraffic: [{permutation: {}}]\nstopms: 3\n"),
            "s.yaml:3:1: stopms: unknown field; expected one of: name, seed, topology, network, cc, traffic, events, stop_ms, buckets");
  EXPECT_EQ(err("traffic: [{permutation: {}}]\n"),
            "s.yaml:1:1: topology: required: {spec: <cluster spec>} or {hpcc: <topology file>}");
  EXPECT_EQ(err("topology: {spec: a.yaml}\ntraffic: [{permutation: {}}\n"), "s.yaml:3:1: end of sequence flow not found");
}

TEST(Scenario, RunsEveryAlgorithmAndWritesResults) {
  fs::path dir = temp_dir("run");
  write(dir / "tiny.yaml", kSpec);
  write(dir / "scenario.yaml", R"(name: tiny-incast
seed: 3
topology: {spec: tiny.yaml}
cc: [dcqcn, hpcc, tita]
traffic:
  - incast: {receiver: 0, senders: 6, bytes: 200000}
  - permutation: {bytes: 100000, start_us: 50}
)");
  Result<Scenario> s = load_scenario((dir / "scenario.yaml").string());
  ASSERT_TRUE(s.ok()) << s.error().message;
  int progress_calls = 0;
  RunSettings settings;
  settings.out_dir = (dir / "out").string();
  settings.progress = [&](const Progress&) { ++progress_calls; };
  Result<std::vector<Report>> reports = run_scenario(*s, settings);
  ASSERT_TRUE(reports.ok()) << reports.error().message;
  ASSERT_EQ(reports->size(), 3u);
  for (const Report& r : *reports) {
    EXPECT_EQ(r.finished, 14u) << r.cc;
    EXPECT_EQ(r.counters.data_packets_dropped, 0u);
    EXPECT_GE(r.slowdown.back().p50, 1.0);
  }
  EXPECT_GE(progress_calls, 3);
  for (const char* f : {"summary.csv", "slowdown.csv", "results.json", "slowdown.svg", "hpcc/fct.txt"})
    EXPECT_TRUE(fs::exists(dir / "out" / f)) << f;
  const std::string fct = read(dir / "out" / "tita" / "fct.txt");
  EXPECT_EQ(std::count(fct.begin(), fct.end(), '\n'), 14);
  EXPECT_NE(read(dir / "out" / "slowdown.svg").find("<polyline"), std::string::npos);
  // Same scenario, same seed: the same FCT file, byte for byte.
  settings.out_dir = (dir / "again").string();
  settings.cc = {"tita"};
  ASSERT_TRUE(run_scenario(*s, settings).ok());
  EXPECT_EQ(read(dir / "again" / "tita" / "fct.txt"), fct);
  fs::remove_all(dir);
}

// Golden outputs: the whole FCT file of a small scenario per algorithm, byte for byte.
// A change that moves any flow's completion by a picosecond shows here. After an
// intended change, regenerate with XM_UPDATE_GOLDEN=1 and review the diff.
TEST(Scenario, GoldenFctFilesAreUnchanged) {
  fs::path dir = temp_dir("golden");
  write(dir / "tiny.yaml", kSpec);
  write(dir / "scenario.yaml", R"(name: golden
seed: 7
topology: {spec: tiny.yaml}
traffic:
  - incast: {receiver: 5, senders: 5, bytes: 300000, rounds: 2, interval_us: 200}
  - permutation: {bytes: 200000, start_us: 30}
  - poisson: {cdf: )" XM_CDF_DIR R"(/WebSearch_distribution.txt, load: 0.5, duration_ms: 0.2}
)");
  Result<Scenario> s = load_scenario((dir / "scenario.yaml").string());
  ASSERT_TRUE(s.ok()) << s.error().message;
  RunSettings settings;
  settings.out_dir = (dir / "out").string();
  settings.cc = {"none", "dcqcn", "dcqcn-paper", "hpcc", "tita"};
  ASSERT_TRUE(run_scenario(*s, settings).ok());
  const bool update = std::getenv("XM_UPDATE_GOLDEN") != nullptr;
  for (const std::string& cc : settings.cc) {
    const fs::path golden = fs::path(XM_GOLDEN_DIR) / (cc + ".fct.txt");
    const std::string got = read(dir / "out" / cc / "fct.txt");
    if (update) {
      write(golden, got);
      continue;
    }
    ASSERT_TRUE(fs::exists(golden)) << golden << " missing: run with XM_UPDATE_GOLDEN=1";
    EXPECT_EQ(got, read(golden)) << cc << ": output changed; if intended, XM_UPDATE_GOLDEN=1";
  }
  fs::remove_all(dir);
}

TEST(Scenario, HpccTopologyAndFlowFilesImport) {
  fs::path dir = temp_dir("hpcc");
  write(dir / "topology.txt", "5 1 4\n4\n0 4 100Gbps 1000ns 0.000000\n1 4 100Gbps 1000ns 0.000000\n"
                              "2 4 100Gbps 1000ns 0.000000\n3 4 100Gbps 1000ns 0.000000\n");
  write(dir / "flow.txt", "3\n0 3 3 100 100000 2.0\n1 3 3 100 100000 2.0\n2 3 3 100 1000 2.00001\n");
  write(dir / "s.yaml", "topology: {hpcc: topology.txt}\ncc: hpcc\ntraffic: [{hpcc_flows: flow.txt}]\nstop_ms: 3000\n");
  Result<Scenario> s = load_scenario((dir / "s.yaml").string());
  ASSERT_TRUE(s.ok()) << s.error().message;
  Result<std::vector<Report>> reports = run_scenario(*s, RunSettings{});
  ASSERT_TRUE(reports.ok()) << reports.error().message;
  EXPECT_EQ((*reports)[0].finished, 3u);
  EXPECT_GT((*reports)[0].last_finish_us, 2e6) << "flows start at 2 s, as the file says";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace xm::sim
