// Commands run as real processes: input fed and output drained together.
#include <gtest/gtest.h>

#include "testbed/system.h"

namespace xm::testbed {
namespace {

TEST(RunCommand, InputAndOutputFarLargerThanAPipeDoNotDeadlock) {
  // `cat` prints as it reads: with 4 MiB each way, writing all the input before reading
  // any output fills both pipes and neither side moves.
  std::string input;
  for (int i = 0; input.size() < (4u << 20); ++i) input += "route get 10.77.0." + std::to_string(i % 250) + "\n";
  Result<std::string> out = run_command({"cat"}, input);
  ASSERT_TRUE(out) << out.error().message;
  EXPECT_EQ(*out, input);
}

TEST(RunCommand, AFailureNamesTheCommandAndItsStatus) {
  Result<std::string> r = run_command({"sh", "-c", "echo broken >&2; exit 3"});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("exit 3"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find("broken"), std::string::npos) << r.error().message;
  EXPECT_FALSE(run_command({"xm-no-such-command"}));
}

}  // namespace
}  // namespace xm::testbed
