// The plan on disk: deterministic files, a check that finds every edit, the inventory in
// SQLite, configurations real FRR accepts, and a directory that is never half-written.
#include "ops/plan_dir.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/shell.h"
#include "ops/inventory.h"
#include "ops/render.h"
#include "ops/test_specs.h"

namespace xm::ops {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void spit(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

class PlanDir : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("xm-plan-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_);
    Result<FabricPlan> plan = make_plan(ops_test::rail_spec(4, 2, 2), {});
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    plan_ = std::move(plan).value();
    dir_ = (root_ / "plan").string();
    ASSERT_TRUE(write_plan_dir(plan_, dir_).ok());
  }
  void TearDown() override { fs::remove_all(root_); }

  std::vector<std::string> check() {
    Result<std::vector<std::string>> problems = check_plan_dir(dir_);
    EXPECT_TRUE(problems.ok()) << problems.error().message;
    return problems.ok() ? *problems : std::vector<std::string>{"check failed"};
  }

  fs::path root_;
  std::string dir_;
  FabricPlan plan_;
};

TEST_F(PlanDir, SameSpecSameBytesInEveryFileIncludingTheDatabase) {
  std::string again = (root_ / "again").string();
  ASSERT_TRUE(write_plan_dir(*make_plan(plan_.spec, {}), again).ok());
  size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir_)) {
    if (!entry.is_regular_file()) continue;
    ++files;
    fs::path rel = fs::relative(entry.path(), dir_);
    EXPECT_EQ(slurp(entry.path()), slurp(fs::path(again) / rel)) << rel;
  }
  EXPECT_EQ(files, 7 + 4 + 2 * 4 + 1u);  // 7 plan files, 4 hosts, 2 files x 4 switches, sqlite
}

TEST_F(PlanDir, ACleanPlanChecksClean) { EXPECT_TRUE(check().empty()); }

TEST_F(PlanDir, TheCheckNamesTheFileAndLineOfAnEdit) {
  fs::path frr = fs::path(dir_) / "switches/tor1/frr.conf";
  std::string text = slurp(frr);
  size_t at = text.find("remote-as");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 9, "remote-as 65000 !");
  spit(frr, text);
  std::vector<std::string> problems = check();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("switches/tor1/frr.conf:", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("expected `"), std::string::npos) << problems[0];
}

TEST_F(PlanDir, TheCheckFindsMissingAndStrayFilesAndABadInventory) {
  fs::remove(fs::path(dir_) / "hosts/h2.sh");
  spit(fs::path(dir_) / "switches/tor0/notes.txt", "hand-written\n");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open((fs::path(dir_) / "inventory.sqlite").c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "DELETE FROM cables WHERE id = 3", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  std::vector<std::string> problems = check();
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], "hosts/h2.sh: missing");
  EXPECT_EQ(problems[1], "switches/tor0/notes.txt: not part of the plan");
  EXPECT_NE(problems[2].find("table cables has 11 rows, the plan 12"), std::string::npos) << problems[2];
}

TEST_F(PlanDir, AMalformedCablingFileNamesLineAndField) {
  fs::path csv = fs::path(dir_) / "cabling.csv";
  std::string text = slurp(csv);
  size_t line3 = text.find('\n', text.find('\n') + 1) + 1;  // the second cable
  text.replace(text.find(",400", line3), 4, ",fast");
  spit(csv, text);
  Result<std::vector<Cable>> parsed = parse_cabling_csv(text, "cabling.csv");
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.error().message, "cabling.csv:3: gbps: expected a positive speed in Gbit/s, found `fast`");
  std::vector<std::string> problems = check();
  EXPECT_NE(std::find(problems.begin(), problems.end(), parsed.error().message), problems.end());
  EXPECT_FALSE(parse_cabling_csv("cable,tier\n", "x.csv").ok());
  EXPECT_EQ(parse_cabling_csv(cabling_csv(plan_), "c").value(), plan_.cables);
}

TEST_F(PlanDir, ADirectoryThatIsNotAPlanIsLeftAlone) {
  fs::path other = root_ / "mine";
  fs::create_directories(other);
  spit(other / "thesis.tex", "precious\n");
  Status s = write_plan_dir(plan_, other.string());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("not a plan"), std::string::npos);
  EXPECT_EQ(slurp(other / "thesis.tex"), "precious\n");
  EXPECT_EQ(std::distance(fs::directory_iterator(other), fs::directory_iterator()), 1);
}

TEST_F(PlanDir, ReplanningASmallerClusterLeavesNoFileOfTheBiggerOne) {
  ASSERT_TRUE(write_plan_dir(*make_plan(ops_test::rail_spec(2, 2, 2), {}), dir_).ok());
  EXPECT_FALSE(fs::exists(fs::path(dir_) / "hosts/h3.sh"));
  EXPECT_TRUE(check().empty());
  EXPECT_FALSE(fs::exists(dir_ + ".new"));
  EXPECT_FALSE(fs::exists(dir_ + ".old"));
}

TEST_F(PlanDir, TheInventoryHoldsTheWholePlanWithItsKeysIntact) {
  Result<RowCounts> counts = sqlite_row_counts(dir_ + "/inventory.sqlite");
  ASSERT_TRUE(counts.ok());
  EXPECT_EQ(*counts, plan_row_counts(plan_));
  EXPECT_EQ(counts->at("cables"), 12);
  // A cable whose end is no port of the plan breaks a foreign key.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir_ + "/inventory.sqlite").c_str(), &db), SQLITE_OK);
  sqlite3_exec(db, "PRAGMA foreign_keys = ON", nullptr, nullptr, nullptr);
  int rc = sqlite3_exec(db, "INSERT INTO cables VALUES (99, 'host-tor', 0, 'h9', 'nic0', 'tor0', 'h9-nic0', 400)",
                        nullptr, nullptr, nullptr);
  sqlite3_close(db);
  EXPECT_EQ(rc, SQLITE_CONSTRAINT);
}

TEST_F(PlanDir, RealFrrAcceptsEverySwitchConfiguration) {
  ASSERT_EQ(shell::run("command -v vtysh").exit_code, 0) << "FRR is not installed (scripts/install-deps.sh installs frr)";
  for (const Device& d : plan_.devices) {
    if (d.role == Role::kHost) continue;
    std::string file = dir_ + "/switches/" + d.name + "/frr.conf";
    shell::Outcome o = shell::run("vtysh -C -f " + file);
    EXPECT_EQ(o.exit_code, 0) << file << "\n" << o.out;
  }
  // And it is a real check: a typo fails it.
  spit(root_ / "bad.conf", "router bgp 1\n neighbor 10.0.0.1 remote-az 2\n");
  EXPECT_NE(shell::run("vtysh -C -f " + (root_ / "bad.conf").string()).exit_code, 0);
}

TEST_F(PlanDir, GraphvizReadsTheTopologyDotWithEveryCable) {
  ASSERT_EQ(shell::run("command -v gvpr").exit_code, 0) << "Graphviz is not installed (scripts/install-deps.sh installs graphviz)";
  shell::Outcome o = shell::run("gvpr 'BEG_G { printf(\"%d %d\\n\", nNodes($G), nEdges($G)); }' " + dir_ +
                                "/topology.dot", false);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_EQ(o.out, std::to_string(plan_.devices.size()) + " " + std::to_string(plan_.cables.size()) + "\n");
}

TEST_F(PlanDir, TheHostScriptIsValidShellAndRoutesEachRailByItsSource) {
  std::string script = dir_ + "/hosts/h3.sh";
  EXPECT_EQ(shell::run("sh -n " + script).exit_code, 0);
  std::string text = slurp(script);
  EXPECT_NE(text.find("ip rule add from 10.77.1.4 lookup 101 priority 1001"), std::string::npos);
  EXPECT_NE(text.find("ip route replace default via 10.77.1.254 dev nic1 src 10.77.1.4 table 101"), std::string::npos);
  EXPECT_NE(text.find("mlnx_qos -i nic1 --trust dscp --pfc 0,0,0,1,0,0,0,0"), std::string::npos);
  EXPECT_NE(text.find("cma_roce_tos -d \"${ib##*/}\" -t 106"), std::string::npos);
}

TEST_F(PlanDir, TheCommandLinePlansChecksAndRefuses) {
  const std::string xm = XM_BINARY;
  std::string out = (root_ / "cli").string();
  std::string spec = (root_ / "spec.yaml").string();
  spit(spec, topo::spec_to_yaml(ops_test::rail_spec(16, 8, 2)));
  shell::Outcome o = shell::run(xm + " ops plan " + spec + " -o " + out);
  ASSERT_EQ(o.exit_code, 0) << o.out;
  EXPECT_NE(o.out.find("16 hosts, 10 switches, 144 cables"), std::string::npos) << o.out;
  o = shell::run(xm + " ops plan --check " + out);
  EXPECT_EQ(o.exit_code, 0) << o.out;
  spit(fs::path(out) / "addresses.csv", "tampered\n");
  o = shell::run(xm + " ops plan --check " + out);
  EXPECT_EQ(o.exit_code, 1) << o.out;
  EXPECT_NE(o.out.find("addresses.csv:1: expected `device,interface,address,purpose`, found `tampered`"),
            std::string::npos) << o.out;
  spit(spec, "servers: [1]\n");
  o = shell::run(xm + " ops plan " + spec + " -o " + out);
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.out.find("servers"), std::string::npos) << o.out;
}

}  // namespace
}  // namespace xm::ops
