// The switches' forwarding decisions asked over netlink, in a real network namespace with
// a two-way multipath route: every answer is the one `ip route get` gives for the same
// 5-tuple, both next hops are taken, and what the kernel cannot route answers "" at once.
// Needs root.
#include "ops/route_query.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <set>

#include "testbed/system.h"

namespace xm::ops {
namespace {

using testbed::run_command;

class RouteQueryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testbed::is_root()) << "needs root: network namespaces";
    ASSERT_TRUE(run_command({"ip", "netns", "add", ns_})) << ns_;
    std::vector<std::string> batch = {"link set lo up"};
    for (const char* l : {"in0", "up1", "up2"})
      batch.insert(batch.end(), {std::string("link add ") + l + " type veth peer name " + l + "p", std::string("link set ") + l + " up",
                                 std::string("link set ") + l + "p up"});
    batch.insert(batch.end(), {"addr add 10.99.0.1/24 dev in0", "addr add 10.99.1.1/24 dev up1", "addr add 10.99.2.1/24 dev up2",
                               "route add 10.99.9.0/24 nexthop via 10.99.1.2 dev up1 nexthop via 10.99.2.2 dev up2"});
    ASSERT_TRUE(testbed::write_sysctls(ns_, {{"net.ipv4.ip_forward", "1"}, {"net.ipv4.fib_multipath_hash_policy", "1"}}));
    ASSERT_TRUE(testbed::run_batch({"ip", ns_, batch}));
  }
  void TearDown() override {
    (void)run_command({"ip", "netns", "del", ns_});
  }

  // What `ip route get` says, "" when it fails.
  std::string ip_says(const RouteQuery& q) {
    Result<std::string> out = run_command({"ip", "-n", ns_, "-j", "route", "get", to_string(q.dst), "from", to_string(q.src), "iif", q.in_port,
                                           "ipproto", "udp", "sport", std::to_string(q.sport), "dport", std::to_string(q.dport)});
    if (!out) return "";
    nlohmann::json j = nlohmann::json::parse(*out, nullptr, false);
    return j.is_array() && !j.empty() ? j[0].value("dev", "") : "";
  }

  const std::string ns_ = "xm-route-query-" + std::to_string(::getpid());
  const Ipv4 src_{(10u << 24) | (99u << 16) | 5}, dst_{(10u << 24) | (99u << 16) | (9u << 8) | 9};
};

TEST_F(RouteQueryTest, EveryAnswerIsWhatIpRouteGetSaysAndBothNextHopsAreTaken) {
  std::vector<RouteQuery> queries;
  for (uint16_t sport = 1000; sport < 1064; ++sport) queries.push_back({src_, dst_, "in0", sport, 7947});
  Result<RouteAsker> asker = RouteAsker::open(ns_);
  ASSERT_TRUE(asker) << asker.error().message;
  Result<std::vector<std::string>> ports = asker->ask(queries);
  ASSERT_TRUE(ports) << ports.error().message;
  ASSERT_EQ(ports->size(), queries.size());
  std::set<std::string> taken;
  for (size_t i = 0; i < queries.size(); ++i) {
    EXPECT_EQ((*ports)[i], ip_says(queries[i])) << "sport " << queries[i].sport;
    taken.insert((*ports)[i]);
  }
  EXPECT_EQ(taken, (std::set<std::string>{"up1", "up2"}));
}

TEST_F(RouteQueryTest, WhatTheKernelCannotRouteAnswersNothingAndFast) {
  // The 10.99.9.0/24 route gone, as a switch's are when its neighbours are down.
  ASSERT_TRUE(run_command({"ip", "-n", ns_, "route", "del", "10.99.9.0/24"}));
  Result<RouteAsker> asker = RouteAsker::open(ns_);
  ASSERT_TRUE(asker) << asker.error().message;
  std::vector<RouteQuery> queries;
  for (uint16_t sport = 1000; sport < 3000; ++sport) queries.push_back({src_, dst_, "in0", sport, 7947});  // to nowhere
  queries.push_back({src_, Ipv4{(10u << 24) | (99u << 16) | (1u << 8) | 2}, "gone0", 1000, 7947});      // arriving on no port
  queries.push_back({src_, Ipv4{(10u << 24) | (99u << 16) | (1u << 8) | 2}, "in0", 1000, 7947});        // routable
  const auto started = std::chrono::steady_clock::now();
  Result<std::vector<std::string>> ports = asker->ask(queries);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(ports) << ports.error().message;
  ASSERT_EQ(ports->size(), queries.size());
  for (size_t i = 0; i + 1 < queries.size(); ++i) EXPECT_EQ((*ports)[i], "") << i;
  EXPECT_EQ(ports->back(), "up1");  // the answers after the unroutable ones are still theirs
  EXPECT_EQ(ip_says(queries[0]), "");
  EXPECT_EQ(ip_says(queries.back()), "up1");
  EXPECT_LT(seconds, 1.0) << "2,001 unroutable questions";  // a process each took 25 s for a switch
}

TEST_F(RouteQueryTest, ANamespaceThatDoesNotExistIsAClearError) {
  Result<RouteAsker> asker = RouteAsker::open(ns_ + "-missing");
  ASSERT_FALSE(asker);
  EXPECT_NE(asker.error().message.find(ns_ + "-missing"), std::string::npos) << asker.error().message;
}

}  // namespace
}  // namespace xm::ops
