// `xm` as a user runs it: real processes, real files, exit codes and messages.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "common/shell.h"

namespace {

namespace fs = std::filesystem;

using shell::Outcome;

// Runs xm with `args` in `dir`.
Outcome xm(const std::string& args, const fs::path& dir) {
  return shell::run("cd '" + dir.string() + "' && '" XM_BINARY "' " + args);
}

class XmCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("xm-cli-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(XmCli, MainJobPrintsTheDefaultClusterSummary) {
  Outcome r = xm("", dir_);
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("cluster xingmai (built-in default)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1,024 accelerators"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("3.2 Tbit/s"), std::string::npos) << r.out;
}

TEST_F(XmCli, GenThenShowAHundredThousandGpus) {
  Outcome gen = xm("topo gen --gpus 102400 --rails 8", dir_);
  ASSERT_EQ(gen.exit_code, 0) << gen.out;
  ASSERT_TRUE(fs::exists(dir_ / "cluster.yaml"));
  Outcome show = xm("topo show", dir_);
  ASSERT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("(cluster.yaml)"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("12,800 × 8 = 102,400 accelerators"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("per server        3.2 Tbit/s"), std::string::npos) << show.out;
  EXPECT_NE(show.out.find("(non-blocking)"), std::string::npos) << show.out;
  Outcome json = xm("topo show --json", dir_);
  ASSERT_EQ(json.exit_code, 0);
  EXPECT_NE(json.out.find("\"servers\": 12800"), std::string::npos) << json.out;
}

TEST_F(XmCli, GenWritesJsonThatShowReads) {
  ASSERT_EQ(xm("topo gen --gpus 64 --kind clos -o c.json", dir_).exit_code, 0);
  Outcome show = xm("topo show c.json", dir_);
  EXPECT_EQ(show.exit_code, 0) << show.out;
  EXPECT_NE(show.out.find("conventional Clos"), std::string::npos) << show.out;
}

TEST_F(XmCli, PathExplainsRails) {
  Outcome same = xm("topo path srv0/gpu2 srv5/gpu2", dir_);
  ASSERT_EQ(same.exit_code, 0) << same.out;
  EXPECT_NE(same.out.find("one ToR hop"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("srv0/gpu2 -> srv0/nic2 -> tor-s0-r2 -> srv5/nic2 -> srv5/gpu2"), std::string::npos);
  Outcome none = xm("topo path srv0/gpu2 srv100/gpu3 --max 0", dir_);
  ASSERT_EQ(none.exit_code, 0) << none.out;
  EXPECT_NE(none.out.find("different rails"), std::string::npos) << none.out;
  EXPECT_NE(none.out.find("... and 8 more"), std::string::npos) << none.out;
  Outcome cross = xm("topo path srv0/gpu2 srv5/gpu3 --json", dir_);
  ASSERT_EQ(cross.exit_code, 0) << cross.out;
  EXPECT_NE(cross.out.find("\"one_tor_hop\": false"), std::string::npos) << cross.out;
  EXPECT_NE(cross.out.find("different rails"), std::string::npos) << cross.out;
}

TEST_F(XmCli, BadSpecFailsWithFileLineField) {
  std::ofstream(dir_ / "bad.yaml") << "servers: 8\nfabric:\n  kind: clos\n  tor: {servers: 1, ports: lots}\n";
  Outcome r = xm("topo show bad.yaml", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("bad.yaml:4:28: fabric.tor.ports: expected a whole number, got \"lots\""), std::string::npos)
      << r.out;
}

TEST_F(XmCli, WrongArgumentsFailClearly) {
  Outcome r = xm("topo gen --gpus 1001 -o -", dir_);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.out.find("--gpus 1001 is not a positive multiple"), std::string::npos) << r.out;
  r = xm("topo path srv0/gpu0 srv999/gpu0", dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("no node named \"srv999/gpu0\""), std::string::npos) << r.out;
  r = xm("topo gen --kind dragonfly", dir_);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.out.find("dragonfly"), std::string::npos) << r.out;
  r = xm("topo nonsense", dir_);
  EXPECT_NE(r.exit_code, 0);
}

TEST_F(XmCli, TrafficClassifiesPatternsAndMatrices) {
  Outcome rings = xm("topo traffic --pattern rail-rings", dir_);
  ASSERT_EQ(rings.exit_code, 0) << rings.out;
  EXPECT_NE(rings.out.find("network bytes kept inside a rail: 98.4 %"), std::string::npos) << rings.out;
  std::ofstream(dir_ / "m.csv") << "src,dst,bytes\nsrv0/gpu1,srv3/gpu1,100\nsrv0/gpu1,srv3/gpu2,300\n";
  Outcome matrix = xm("topo traffic --matrix m.csv --json", dir_);
  ASSERT_EQ(matrix.exit_code, 0) << matrix.out;
  EXPECT_NE(matrix.out.find("\"rail_share\": 0.25"), std::string::npos) << matrix.out;
  Outcome neither = xm("topo traffic", dir_);
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.out.find("give one of --pattern or --matrix"), std::string::npos) << neither.out;
  Outcome missing = xm("topo traffic --matrix nothere.csv", dir_);
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.out.find("nothere.csv: cannot open the traffic matrix"), std::string::npos) << missing.out;
}

TEST_F(XmCli, EverySubcommandHasHelp) {
  for (const char* sub : {"topo gen", "topo show", "topo path", "topo dot", "topo traffic", "topo"}) {
    Outcome r = xm(std::string(sub) + " --help", dir_);
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub << ": " << r.out;
  }
}

TEST_F(XmCli, DotDrawsSmallFabricsAndRefusesHugeOnes) {
  ASSERT_EQ(xm("topo gen --gpus 32 --rails 4 --gpus-per-server 4", dir_).exit_code, 0);
  Outcome dot = xm("topo dot", dir_);
  ASSERT_EQ(dot.exit_code, 0) << dot.out;
  EXPECT_EQ(dot.out.rfind("graph \"xingmai\" {", 0), 0u) << dot.out;
  EXPECT_NE(dot.out.find("\"srv0/nic1\" -- \"tor-s0-r1\""), std::string::npos) << dot.out;
  ASSERT_EQ(xm("topo gen --gpus 102400", dir_).exit_code, 0);
  Outcome big = xm("topo dot", dir_);
  EXPECT_EQ(big.exit_code, 2);
  EXPECT_NE(big.out.find("--max-nodes"), std::string::npos) << big.out;
}

}  // namespace
