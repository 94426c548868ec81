// Bad arguments, strangers and dead peers: clear errors, never a crash or a hang.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>

#include "ccl/bootstrap/bootstrap.h"
#include "process_world.h"

namespace xm::ccl {
namespace {

// A one-rank communicator in this process (no peers, no shared memory needed).
class OneRank : public ::testing::Test {
 protected:
  void SetUp() override {
    xcclUniqueId id;
    ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess) << xcclGetLastError();
    ASSERT_EQ(xcclCommInitRank(&comm_, 1, id, 0), xcclSuccess) << xcclGetLastError();
  }
  void TearDown() override { EXPECT_EQ(xcclCommDestroy(comm_), xcclSuccess); }
  xcclComm_t comm_ = nullptr;
};

TEST_F(OneRank, WrongArgumentsReturnErrorsWithMessages) {
  float x[4] = {1, 2, 3, 4}, y[4];
  EXPECT_EQ(xcclAllReduce(nullptr, y, 4, xcclFloat, xcclSum, comm_), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "sendbuff is NULL"), nullptr) << xcclGetLastError();
  EXPECT_EQ(xcclAllReduce(x, nullptr, 4, xcclFloat, xcclSum, comm_), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "recvbuff is NULL"), nullptr);
  EXPECT_EQ(xcclAllReduce(x, y, 4, xcclDataType_t(42), xcclSum, comm_), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "unknown data type 42"), nullptr);
  EXPECT_EQ(xcclAllReduce(x, y, 4, xcclFloat, xcclRedOp_t(-1), comm_), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "unknown reduction op"), nullptr);
  EXPECT_EQ(xcclAllGather(x, y, std::numeric_limits<size_t>::max() / 2, xcclFloat, comm_), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "overflows"), nullptr) << xcclGetLastError();
  EXPECT_EQ(xcclBroadcast(x, y, 4, xcclFloat, 1, comm_), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "root 1 is not a rank of 0..0"), nullptr) << xcclGetLastError();
  EXPECT_EQ(xcclSend(x, 4, xcclFloat, 0, comm_), xcclInvalidArgument);  // to itself
  EXPECT_EQ(xcclAllReduce(x, y, 4, xcclFloat, xcclSum, nullptr), xcclInvalidArgument);
  EXPECT_EQ(xcclGroupEnd(), xcclInvalidUsage);
  // Count 0 with null buffers is fine, and the communicator still works after errors.
  EXPECT_EQ(xcclAllReduce(nullptr, nullptr, 0, xcclFloat, xcclSum, comm_), xcclSuccess);
  EXPECT_EQ(xcclAllReduce(x, y, 4, xcclFloat, xcclMax, comm_), xcclSuccess);
  EXPECT_EQ(y[3], 4.0f);
}

TEST(XcclInit, RankOutOfRangeAndBadIds) {
  xcclUniqueId id;
  ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess);
  xcclComm_t comm = nullptr;
  EXPECT_EQ(xcclCommInitRank(&comm, 2, id, 2), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "rank 2 is not in 0..1"), nullptr) << xcclGetLastError();
  EXPECT_EQ(xcclCommInitRank(&comm, 0, id, 0), xcclInvalidArgument);
  xcclUniqueId junk{};
  std::strcpy(junk.internal, "not an id");
  EXPECT_EQ(xcclCommInitRank(&comm, 1, junk, 0), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "not an xccl unique id"), nullptr);
}

TEST(XcclInit, FromEnvironmentExplainsWhatIsMissing) {
  ::unsetenv("RANK");
  ::unsetenv("XCCL_RANK");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  ::unsetenv("SLURM_PROCID");
  xcclComm_t comm = nullptr;
  EXPECT_EQ(xcclCommInitFromEnv(&comm), xcclInvalidArgument);
  EXPECT_NE(std::strstr(xcclGetLastError(), "no launcher environment"), nullptr) << xcclGetLastError();
}

TEST(Bootstrap, StrangersAreRefusedAndTheJobStillForms) {
  net::Secret secret = net::random_secret();
  auto root = BootstrapRoot::start("127.0.0.1", 0, secret, std::chrono::seconds(20)).value();
  JobId job{root->endpoint(), secret};
  auto soon = [] { return net::Clock::now() + std::chrono::seconds(5); };
  // A client with the wrong secret.
  JobId wrong{root->endpoint(), net::random_secret()};
  Result<BootstrapClient> impostor = BootstrapClient::join(wrong, 0, 2, soon());
  EXPECT_FALSE(impostor.ok());
  // A raw connection that sends garbage, and one that says nothing and hangs up.
  {
    auto fd = net::connect_to(root->endpoint(), soon()).value();
    const char junk[] = "GET / HTTP/1.1\r\nHost: x\r\n\r\n0123456789012345678901234567890123456789";
    ASSERT_TRUE(net::send_all(fd.get(), junk, sizeof junk, soon()).ok());
    char reply[4096];  // the root's half of the handshake is 48 bytes, then it hangs up
    Status st = net::recv_all(fd.get(), reply, sizeof reply, soon());
    EXPECT_FALSE(st.ok()) << "closed or reset, not left hanging";
  }
  { auto fd = net::connect_to(root->endpoint(), soon()).value(); }
  // The real ranks still join and exchange.
  Result<BootstrapClient> a = BootstrapClient::join(job, 0, 2, soon());
  Result<BootstrapClient> b = BootstrapClient::join(job, 1, 2, soon());
  ASSERT_TRUE(a.ok()) << a.error().message;
  ASSERT_TRUE(b.ok()) << b.error().message;
  std::thread t([&] { EXPECT_TRUE(b->allgather("from b", soon()).ok()); });
  Result<std::vector<std::string>> all = a->allgather("from a", soon());
  t.join();
  ASSERT_TRUE(all.ok()) << all.error().message;
  EXPECT_EQ(*all, (std::vector<std::string>{"from a", "from b"}));
  for (int i = 0; i < 100 && root->refused() < 3; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(root->refused(), 3);
}

TEST(Bootstrap, HundredSilentConnectionsDelayNoRank) {
  net::Secret secret = net::random_secret();
  auto root = BootstrapRoot::start("127.0.0.1", 0, secret, std::chrono::seconds(30)).value();
  JobId job{root->endpoint(), secret};
  auto soon = net::Clock::now() + std::chrono::seconds(20);
  // Connected before any rank, saying nothing: each would have held the root for 5 s when
  // it took one handshake at a time.
  std::vector<net::Fd> silent;
  for (int i = 0; i < 100; ++i) silent.push_back(net::connect_to(root->endpoint(), soon).value());
  constexpr int kRanks = 4;
  auto start = net::Clock::now();
  std::vector<std::thread> ranks;
  std::vector<int> ok(kRanks, 0);
  for (int r = 0; r < kRanks; ++r)
    ranks.emplace_back([&, r] {
      Result<BootstrapClient> c = BootstrapClient::join(job, r, kRanks, soon);
      ASSERT_TRUE(c.ok()) << c.error().message;
      Result<std::vector<std::string>> all = c->allgather(std::to_string(r), soon);
      ASSERT_TRUE(all.ok()) << all.error().message;
      ok[r] = all->size() == kRanks && (*all)[3] == "3";
    });
  for (std::thread& t : ranks) t.join();
  auto took = net::Clock::now() - start;
  EXPECT_EQ(ok, std::vector<int>(kRanks, 1));
  // Joined and exchanged before a single stranger's 5 s ran out.
  EXPECT_EQ(root->refused(), 0);
  EXPECT_LT(took, std::chrono::seconds(5));
}

TEST(XcclProcesses, ADeadRankMakesTheOthersFailWithinTheTimeout) {
  ::setenv("XCCL_TIMEOUT_MS", "2000", 1);
  auto started = std::chrono::steady_clock::now();
  auto results = test::run_ranks(3, [](xcclComm_t comm, int rank) {
    if (rank == 2) _exit(0);  // dies right after joining
    std::vector<float> x(1 << 20, 1.0f);
    xcclResult_t r = xcclAllReduce(x.data(), x.data(), x.size(), xcclFloat, xcclSum, comm);
    if (r == xcclSuccess) return 10;  // must not succeed without rank 2
    xcclResult_t async = xcclSuccess;
    xcclCommGetAsyncError(comm, &async);
    if (async != xcclRemoteError) return 11;
    std::fprintf(stderr, "rank %d saw: %s\n", rank, xcclGetLastError());
    if (!std::strstr(xcclGetLastError(), " (this host, pid ")) return 12;  // names whom it lost: rank 2, or 0 aborting
    xcclCommAbort(comm);
    _exit(0);
  });
  ::unsetenv("XCCL_TIMEOUT_MS");
  auto elapsed = std::chrono::steady_clock::now() - started;
  ASSERT_EQ(results.size(), 3u);
  EXPECT_EQ(results[0].exit_code, 0);
  EXPECT_EQ(results[1].exit_code, 0);
  EXPECT_LT(elapsed, std::chrono::seconds(15)) << "the survivors must not hang";
}

// One rank of four dies mid-run; the survivors see the error, shrink to three without a new
// unique id, and finish the job there, exactly — over shared memory and over TCP.
TEST(XcclProcesses, SurvivorsShrinkPastADeadRankAndFinish) {
  for (bool tcp : {false, true}) {
    auto results = test::run_ranks(
        4,
        [](xcclComm_t comm, int rank) {
          std::vector<float> x(1 << 18, float(rank + 1)), y(x.size());
          if (xcclAllReduce(x.data(), y.data(), x.size(), xcclFloat, xcclSum, comm) != xcclSuccess) return 1;
          if (y[0] != 10.0f) return 2;
          if (rank == 3) _exit(0);  // dies mid-run
          while (xcclAllReduce(x.data(), y.data(), x.size(), xcclFloat, xcclSum, comm) == xcclSuccess) {
          }
          xcclResult_t async = xcclSuccess;
          xcclCommGetAsyncError(comm, &async);
          if (async != xcclRemoteError) return 3;
          const int gone[] = {3};
          xcclComm_t smaller = nullptr;
          if (xcclCommShrink(comm, gone, 1, &smaller) != xcclSuccess) {
            std::fprintf(stderr, "rank %d: %s\n", rank, xcclGetLastError());
            return 4;
          }
          int count = 0, me = -1;
          xcclCommCount(smaller, &count);
          xcclCommUserRank(smaller, &me);
          if (count != 3 || me != rank) return 5;
          for (int i = 0; i < 3; ++i) {
            if (xcclAllReduce(x.data(), y.data(), x.size(), xcclFloat, xcclSum, smaller) != xcclSuccess) return 6;
            for (float v : y)
              if (v != 6.0f) return 7;  // 1 + 2 + 3: the dead rank's 4 is gone
          }
          std::vector<int32_t> mine(1000, rank), all(3000, -1);
          if (xcclAllGather(mine.data(), all.data(), mine.size(), xcclInt32, smaller) != xcclSuccess) return 8;
          for (int r = 0; r < 3; ++r)
            if (all[r * 1000] != r || all[r * 1000 + 999] != r) return 9;
          if (xcclCommDestroy(smaller) != xcclSuccess) return 10;
          xcclCommAbort(comm);  // frees it: leave without the harness destroying it again
          _exit(0);
        },
        std::chrono::seconds(120),
        [tcp](int) {
          setenv("XCCL_TIMEOUT_MS", "3000", 1);
          if (tcp) setenv("XCCL_SHM_DISABLE", "1", 1);
        });
    ASSERT_EQ(results.size(), 4u);
    for (int r = 0; r < 3; ++r) EXPECT_EQ(results[r].exit_code, 0) << "rank " << r << (tcp ? " over TCP" : "");
    if (HasFailure()) break;
  }
}

TEST_F(OneRank, ShrinkRefusesBadLists) {
  xcclComm_t out = nullptr;
  const int self[] = {0}, beyond[] = {5};
  EXPECT_EQ(xcclCommShrink(comm_, self, 1, &out), xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError()).find("own exclude list"), std::string::npos) << xcclGetLastError();
  EXPECT_EQ(xcclCommShrink(comm_, beyond, 1, &out), xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError()).find("not in 0..0"), std::string::npos) << xcclGetLastError();
  EXPECT_EQ(xcclCommShrink(comm_, nullptr, 1, &out), xcclInvalidArgument);
  EXPECT_EQ(xcclCommShrink(comm_, self, -1, &out), xcclInvalidArgument);
  EXPECT_EQ(xcclCommShrink(comm_, nullptr, 0, nullptr), xcclInvalidArgument);
  // Excluding nobody makes a copy of the communicator.
  ASSERT_EQ(xcclCommShrink(comm_, nullptr, 0, &out), xcclSuccess) << xcclGetLastError();
  int count = 0;
  xcclCommCount(out, &count);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(xcclCommDestroy(out), xcclSuccess);
}

TEST_F(OneRank, GroupsAndUnevenAllToAllRefuseMisuse) {
  float x = 1, y = 0;
  xcclRequest_t q = nullptr;
  xcclGroupStart();
  EXPECT_EQ(xcclAllReduceAsync(&x, &y, 1, xcclFloat, xcclSum, comm_, &q), xcclInvalidUsage);
  EXPECT_NE(std::string(xcclGetLastError()).find("inside a group"), std::string::npos) << xcclGetLastError();
  EXPECT_EQ(xcclCommSplit(comm_, 0, 0, &comm_), xcclInvalidUsage);
  EXPECT_EQ(xcclGroupEnd(), xcclSuccess);  // an empty group
  const size_t one = 1, none = 0, zero = 0;
  EXPECT_EQ(xcclAllToAllv(&x, &one, &zero, &y, &none, &zero, xcclFloat, comm_), xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError()).find("sends itself 1 elements but receives 0"), std::string::npos)
      << xcclGetLastError();
  EXPECT_EQ(xcclAllToAllv(&x, nullptr, &zero, &y, &one, &zero, xcclFloat, comm_), xcclInvalidArgument);
  const size_t huge = ~size_t(0) / 2;
  EXPECT_EQ(xcclAllToAllv(&x, &one, &huge, &y, &one, &zero, xcclFloat, comm_), xcclInvalidArgument);
  EXPECT_NE(std::string(xcclGetLastError()).find("overflows"), std::string::npos) << xcclGetLastError();
  ASSERT_EQ(xcclAllToAllv(&x, &one, &zero, &y, &one, &zero, xcclFloat, comm_), xcclSuccess) << xcclGetLastError();
  EXPECT_EQ(y, 1.0f);
  xcclComm_t part = nullptr;
  EXPECT_EQ(xcclCommSplit(comm_, -2, 0, &part), xcclInvalidArgument);
  ASSERT_EQ(xcclCommSplit(comm_, 7, 0, &part), xcclSuccess) << xcclGetLastError();
  int count = 0;
  xcclCommCount(part, &count);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(xcclCommDestroy(part), xcclSuccess);
}

}  // namespace
}  // namespace xm::ccl
