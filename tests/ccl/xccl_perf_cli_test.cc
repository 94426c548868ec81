// xccl-perf run as a user runs it: placed buffers still give exact results, a placement
// outside a page is refused with the option named, and nothing runs; -c checks that many
// iterations, each one.
#include <gtest/gtest.h>

#include <string>

#include "common/shell.h"

namespace {

shell::Outcome perf(const std::string& args) { return shell::run("'" XCCL_PERF_BINARY "' " + args); }

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

TEST(XcclPerf, BuffersPlacedAnywhereInAPageGiveExactResults) {
  for (const char* collective : {"all_reduce", "all_gather", "reduce_scatter", "alltoall"})
    for (const char* place : {"--send-offset 16 --recv-offset 16", "--send-offset 16 --recv-offset 4048",
                              "--send-offset 0 --recv-offset 0", "--send-offset 8 --recv-offset 72"}) {
      shell::Outcome r = perf(std::string(collective) + " --np 2 -b 4K -e 1M -f 16 -n 2 -w 1 -c 1 " + place);
      EXPECT_EQ(r.exit_code, 0) << collective << " " << place << "\n" << r.out;
      EXPECT_TRUE(contains(r.out, "Out of bounds values : 0 OK")) << collective << " " << place << "\n" << r.out;
    }
}

TEST(XcclPerf, APlacementOutsideAPageIsRefused) {
  shell::Outcome r = perf("all_reduce --np 2 -b 4K -e 4K --recv-offset 4096");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(contains(r.out, "--recv-offset")) << r.out;
  EXPECT_FALSE(contains(r.out, "Out of bounds values")) << "nothing may run\n" << r.out;
}

TEST(XcclPerf, EveryCheckedIterationIsCheckedAndCounted) {
  // In place, each iteration overwrites its input: only an input written afresh each time
  // gives the exact result every time.
  shell::Outcome r = perf("all_reduce --np 2 -b 64K -e 64K -n 1 -w 0 -c 5");
  EXPECT_EQ(r.exit_code, 0) << r.out;
  EXPECT_TRUE(contains(r.out, "check on 5 iteration(s) first")) << r.out;
  EXPECT_TRUE(contains(r.out, "Out of bounds values : 0 OK")) << r.out;
  shell::Outcome bad = perf("all_reduce --np 2 -b 4K -e 4K -c -1");
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_TRUE(contains(bad.out, "-c >= 0")) << bad.out;
}

}  // namespace
