// How findings become incidents from one evaluation to the next: one fault is one
// incident while its class sharpens, keeps its sharper class as it is repaired, and
// closes once unseen for the clearing time.
#include "ops/incidents.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>

namespace xm::ops {
namespace {

constexpr double kClear = 15;

Finding on(const std::string& component, const std::string& fault, std::vector<uint32_t> cables) {
  return Finding{component, fault, true, fault + " on " + component, std::move(cables), false};
}
const Finding kCableDown = on("h2/nic1 - tor1:h2-nic1", "link-down", {7});
const Finding kNicDown = on("h2/nic1", "nic-down", {7});

class IncidentsTest : public ::testing::Test {
 protected:
  void at(double now, std::vector<Finding> findings) { track(incidents_, findings, now, kClear, nullptr); }
  std::vector<Incident> incidents_;
};

TEST_F(IncidentsTest, ANicDownSeenFirstAsItsCableWithoutCarrierIsOneIncidentThatSharpens) {
  at(100, {kCableDown});  // the ToR's end scraped after the NIC went down, the host's before
  at(101, {kNicDown});
  ASSERT_EQ(incidents_.size(), 1u);
  EXPECT_EQ(incidents_[0].finding.fault, "nic-down");
  EXPECT_EQ(incidents_[0].finding.component, "h2/nic1");
  EXPECT_EQ(incidents_[0].opened_at, 100);
}

TEST_F(IncidentsTest, ANicBroughtBackUpStaysANicDownAndCloses) {
  at(100, {kNicDown});
  at(101, {kNicDown});
  at(102, {kCableDown});  // repaired: the host's end scraped up, the ToR's not yet
  at(103, {});
  ASSERT_EQ(incidents_.size(), 1u);
  EXPECT_EQ(incidents_[0].finding.fault, "nic-down");
  EXPECT_EQ(incidents_[0].closed_at, 0);
  at(101 + kClear, {});  // unseen as itself since 101
  EXPECT_EQ(incidents_[0].closed_at, 101 + kClear);
}

TEST_F(IncidentsTest, ACableStillWithoutCarrierAfterItsNicCameUpOpensItsOwnIncident) {
  at(100, {kNicDown});
  for (double t = 101; t <= 100 + kClear; ++t) at(t, {kCableDown});
  at(101 + kClear, {kCableDown});
  ASSERT_EQ(incidents_.size(), 2u);
  EXPECT_EQ(incidents_[0].finding.fault, "nic-down");
  EXPECT_EQ(incidents_[0].closed_at, 100 + kClear);
  EXPECT_EQ(incidents_[1].finding.fault, "link-down");
  EXPECT_EQ(incidents_[1].closed_at, 0);
}

TEST_F(IncidentsTest, ABlackHoleFadingFromTheWindowStaysABlackHoleWhileItsLossIsSeen) {
  const Finding hole = on("tor1:spine0 - spine0:tor1", "blackhole", {3});
  Finding loss = hole;
  loss.fault = "loss";
  at(100, {loss});  // its first second
  at(101, {hole});
  for (double t = 102; t < 130; ++t) at(t, {loss});
  ASSERT_EQ(incidents_.size(), 1u);
  EXPECT_EQ(incidents_[0].finding.fault, "blackhole");
  EXPECT_EQ(incidents_[0].closed_at, 0);  // its loss is still in the window
}

TEST_F(IncidentsTest, ASwitchFoundDownAfterSomeOfItsCablesFoldsThemAndKeepsTheRest) {
  at(100, {on("tor1:spine0 - spine0:tor1", "link-down", {3}), on("tor2:spine0 - spine0:tor2", "link-down", {4})});
  at(101, {on("spine0", "switch-down", {3, 4, 5})});
  ASSERT_EQ(incidents_.size(), 1u);
  EXPECT_EQ(incidents_[0].finding.component, "spine0");
  EXPECT_EQ(incidents_[0].opened_at, 100);
  at(110, {on("tor2:spine0 - spine0:tor2", "link-down", {4})});  // coming back, one cable behind
  ASSERT_EQ(incidents_.size(), 1u);
  EXPECT_EQ(incidents_[0].last_seen, 110);
}

TEST_F(IncidentsTest, TheInventoryKeepsTheClassTheIncidentKept) {
  char path[] = "/tmp/xm-incidents-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  {
    Result<IncidentLog> log = IncidentLog::open(path);
    ASSERT_TRUE(log) << log.error().message;
    for (auto [t, f] : {std::pair{100.0, kCableDown}, {101.0, kNicDown}, {102.0, kCableDown}})
      track(incidents_, {f}, t, kClear, &*log);
    Result<std::vector<IncidentRow>> rows = log->all();
    ASSERT_TRUE(rows) << rows.error().message;
    ASSERT_EQ(rows->size(), 1u);
    EXPECT_EQ((*rows)[0].fault, "nic-down");
    EXPECT_EQ((*rows)[0].component, "h2/nic1");
  }
  std::remove(path);
}

}  // namespace
}  // namespace xm::ops
