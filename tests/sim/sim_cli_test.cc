// `xm sim` as a user runs it: a real process, real files, exit codes and messages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "common/shell.h"

namespace {

namespace fs = std::filesystem;

using shell::Outcome;

// Runs xm with `args` in `dir`.
Outcome xm(const std::string& args, const fs::path& dir) {
  return shell::run("cd '" + dir.string() + "' && '" XM_BINARY "' " + args);
}

class XmSim : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xm-sim-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "topology.txt") << "5 1 4\n4\n0 4 100Gbps 1000ns 0\n1 4 100Gbps 1000ns 0\n"
                                            "2 4 100Gbps 1000ns 0\n3 4 100Gbps 1000ns 0\n";
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(XmSim, RunPrintsTheTableAndWritesResults) {
  std::ofstream(dir_ / "s.yaml") << "name: four\ntopology: {hpcc: topology.txt}\ncc: [dcqcn, tita]\n"
                                    "traffic: [{incast: {receiver: 3, senders: 3, bytes: 100000}}]\n";
  Outcome r = xm("sim run s.yaml -o res", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("FCT slowdown | dcqcn"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tita           flows 3/3  drops 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("took"), std::string::npos) << "the progress line ends with the wall time: " << r.out;
  for (const char* f : {"summary.csv", "slowdown.csv", "results.json", "slowdown.svg", "dcqcn/fct.txt", "tita/fct.txt"})
    EXPECT_TRUE(fs::exists(dir_ / "res" / f)) << f;
}

TEST_F(XmSim, HpccRunsTheHpccSimulatorsConfigFile) {
  // The HPCC simulator's files as its users have them: topology, flows, config.txt.
  std::ofstream(dir_ / "flow.txt") << "3\n0 3 3 100 100000 2.0\n1 3 3 100 100000 2.0\n2 3 3 100 5000 2.00001\n";
  const std::string config =
      "TOPOLOGY_FILE topology.txt\nFLOW_FILE flow.txt\nFCT_OUTPUT_FILE out/fct.txt\nPFC_OUTPUT_FILE out/pfc.txt\n"
      "CC_MODE 3\nRATE_AI 40Mb/s\nMIN_RATE 1000Mb/s\nHAS_WIN 1\nVAR_WIN 1\nU_TARGET 0.95\nFAST_REACT 1\n"
      "PACKET_PAYLOAD_SIZE 1000\nBUFFER_SIZE 32\nKMAX_MAP 1 100000000000 1600\nKMIN_MAP 1 100000000000 400\n"
      "PMAX_MAP 1 100000000000 0.2\nACK_HIGH_PRIO 0\n";
  std::ofstream(dir_ / "config.txt") << config;
  Outcome r = xm("sim hpcc config.txt -q -o res", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("hpcc:eta=0.95,min_rate_mbps=1000,w_ai_mbps=40 flows 3/3  drops 0"), std::string::npos) << r.out;
  std::ifstream fct(dir_ / "out" / "fct.txt");
  int lines = 0;
  for (std::string line; std::getline(fct, line); ++lines) {
    std::istringstream f(line);
    std::string sip, dip;
    unsigned long long sport, dport, size, start, took, standalone;
    ASSERT_TRUE(f >> sip >> dip >> sport >> dport >> size >> start >> took >> standalone) << line;
    EXPECT_EQ(dip, "0b000301") << line;
    EXPECT_GT(took, standalone) << line;
  }
  EXPECT_EQ(lines, 3);
  EXPECT_TRUE(fs::exists(dir_ / "res" / "summary.csv"));

  std::ofstream(dir_ / "bad.txt") << config << "CC_MODE 7\n";
  r = xm("sim hpcc bad.txt -q", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("xm sim hpcc: bad.txt:18: CC_MODE: 7 is not modelled: 1 (DCQCN) and 3 (HPCC) are"), std::string::npos)
      << r.out;
  std::ofstream(dir_ / "speeds.txt") << config << "KMIN_MAP 1 25000000000 100\n";
  r = xm("sim hpcc speeds.txt -q", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("KMIN_MAP: the rate 25000000000 needs KMAX_MAP and PMAX_MAP entries too"), std::string::npos) << r.out;
}

TEST_F(XmSim, CollectivesRunInBothEnginesAndWriteTheirTables) {
  std::ofstream(dir_ / "spec.yaml") << "name: r\nservers: 4\nserver: {accelerators: 2, nics: 2, nic_gbps: 100}\n"
                                       "fabric:\n  kind: rail-optimized\n  tor: {ports: 8, servers: 4, uplinks: 4}\n"
                                       "  agg: {ports: 4, tors: 2, count: 2, link: {gbps: 100, latency_ns: 1000}}\n";
  std::ofstream(dir_ / "s.yaml") << "name: c\ntopology: {spec: spec.yaml}\ncc: [none]\ntraffic:\n"
                                    "  - collective: {name: ar, op: all_reduce, bytes: 1M, algorithm: hierarchical}\n"
                                    "  - collective: {name: a2a, op: alltoall, bytes: 1M, after: ar}\n";
  for (const char* engine : {"packet", "flow"}) {
    Outcome r = xm(std::string("sim run s.yaml -q -o res --engine ") + engine, dir_);
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_NE(r.out.find("ar             all_reduce     hierarchical"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("a2a            alltoall       pxn"), std::string::npos) << r.out;
    const std::string cc = std::string(engine) == "flow" ? "flow" : "none";
    for (const char* f : {"collectives.csv", "ranks.csv", "rails.csv", "rails.svg"})
      EXPECT_TRUE(fs::exists(dir_ / "res" / cc / f)) << cc << "/" << f;
  }
  Outcome r = xm("sim run s.yaml -q --engine flow --cc hpcc", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--cc: the flow engine has no congestion control"), std::string::npos) << r.out;
}

TEST_F(XmSim, BadScenarioNamesFileLineAndFieldAndExitsTwo) {
  std::ofstream(dir_ / "bad.yaml") << "topology: {hpcc: topology.txt}\ntraffic:\n  - incast: {senders: many}\n";
  Outcome r = xm("sim run bad.yaml", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("bad.yaml:3:23: traffic[0].incast.senders: expected a whole number, got \"many\""), std::string::npos) << r.out;
}

TEST_F(XmSim, BadFlowFileNamesItsLine) {
  std::ofstream(dir_ / "flow.txt") << "2\n0 3 3 100 1000 0\n0 9 3 100 1000 0\n";
  std::ofstream(dir_ / "s.yaml") << "topology: {hpcc: topology.txt}\ntraffic: [{hpcc_flows: flow.txt}]\n";
  Outcome r = xm("sim run s.yaml -q", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("flow.txt:3: dst: \"9\" is not a host"), std::string::npos) << r.out;
}

TEST_F(XmSim, UnfinishedFlowsExitOne) {
  std::ofstream(dir_ / "s.yaml") << "topology: {hpcc: topology.txt}\ncc: none\nstop_ms: 0.01\n"
                                    "traffic: [{permutation: {bytes: 10000000}}]\n";
  Outcome r = xm("sim run s.yaml -q", dir_);
  EXPECT_EQ(r.exit_code, 1) << r.out;
}

TEST_F(XmSim, HpccTopologyExportRoundTrips) {
  Outcome r = xm("sim hpcc-topology " XM_EXAMPLES_DIR "/hpcc-fat-tree-320.yaml", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')), "376 56 480") << "320 hosts, 56 switches, 480 links";
}

TEST_F(XmSim, HpccFlowsExportWritesTheScenarioFlows) {
  std::ofstream(dir_ / "s.yaml") << "topology: {hpcc: topology.txt}\ntraffic: [{permutation: {bytes: 5000}}]\n";
  Outcome r = xm("sim hpcc-flows s.yaml -o flows.txt", dir_);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  std::ifstream in(dir_ / "flows.txt");
  int count = 0;
  in >> count;
  ASSERT_EQ(count, 4) << "one flow per host";
  int sent[4] = {}, received[4] = {};
  for (int i = 0; i < count; ++i) {
    int src = -1, dst = -1, pg = 0, dport = 0;
    long bytes = 0;
    double start = -1;
    in >> src >> dst >> pg >> dport >> bytes >> start;
    ASSERT_TRUE(src >= 0 && src < 4 && dst >= 0 && dst < 4 && src != dst) << src << " -> " << dst;
    EXPECT_EQ(bytes, 5000);
    EXPECT_EQ(start, 0.0);
    ++sent[src], ++received[dst];
  }
  for (int h = 0; h < 4; ++h) EXPECT_TRUE(sent[h] == 1 && received[h] == 1) << "a permutation: host " << h;
  EXPECT_EQ(xm("sim hpcc-flows missing.yaml", dir_).exit_code, 2);
}

// `xm train` on the shipped 1,024-GPU example: the summary, the files, and a clear exit 2
// for a job that does not fit its cluster.
TEST_F(XmSim, TrainRunsTheExampleJobAndRefusesAnInconsistentOne) {
  Outcome r = xm("train '" XM_EXAMPLES_DIR "/train/gpt3-175b-1024.yaml' -q -o res", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("gpt3-175b-1024: 1024 GPUs (tp 8, pp 8, dp 16, interleaved × 3), 96 micro-batches"),
            std::string::npos) << r.out;
  EXPECT_NE(r.out.find("model TFLOP/s per GPU"), std::string::npos) << r.out;
  for (const char* f : {"iteration.json", "breakdown.csv", "timeline.svg"}) EXPECT_TRUE(fs::exists(dir_ / "res" / f)) << f;

  fs::copy_file(XM_EXAMPLES_DIR "/train/rail-1024-a100.yaml", dir_ / "c.yaml");
  std::ofstream(dir_ / "j.yaml") << "cluster: c.yaml\nmodel: {layers: 96, hidden: 12288, heads: 96}\n"
                                    "parallel: {tp: 8, pp: 6, global_batch: 1536}\ngpu: {type: a100}\n";
  r = xm("train j.yaml -q", dir_);
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("xm train: j.yaml: parallel: tp 8 × pp 6 does not divide the cluster's 1024 accelerators"),
            std::string::npos) << r.out;
}

}  // namespace
