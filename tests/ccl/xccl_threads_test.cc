// xccl's public API with ranks as threads of one process: the communicator's worker,
// requests and bootstrap under ThreadSanitizer (which cannot follow fork()).
#include <gtest/gtest.h>
#include <xccl/xccl.h>

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

void run_threads(int ranks, const char* rails, const std::function<void(xcclComm_t, int)>& body) {
  if (rails) {
    setenv("XCCL_SHM_DISABLE", "1", 1);
    setenv("XCCL_RAILS", rails, 1);
  }
  xcclUniqueId id;
  ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess) << xcclGetLastError();
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      xcclComm_t comm = nullptr;
      ASSERT_EQ(xcclCommInitRank(&comm, ranks, id, r), xcclSuccess) << xcclGetLastError();
      body(comm, r);
      EXPECT_EQ(xcclCommDestroy(comm), xcclSuccess);
    });
  for (auto& t : threads) t.join();
  unsetenv("XCCL_SHM_DISABLE");
  unsetenv("XCCL_RAILS");
}

void mixed_work(xcclComm_t comm, int rank) {
  const int ranks = 3;
  std::vector<float> a(100003, float(rank + 1)), b(a.size());
  std::vector<int32_t> c(777, rank), d(777 * ranks, -1);
  xcclRequest_t r1 = nullptr, r2 = nullptr;
  ASSERT_EQ(xcclAllReduceAsync(a.data(), b.data(), a.size(), xcclFloat, xcclSum, comm, &r1), xcclSuccess);
  ASSERT_EQ(xcclAllGatherAsync(c.data(), d.data(), c.size(), xcclInt32, comm, &r2), xcclSuccess);
  EXPECT_EQ(xcclWait(r2), xcclSuccess);
  EXPECT_EQ(xcclWait(r1), xcclSuccess);
  EXPECT_EQ(b.front(), 6.0f);
  EXPECT_EQ(b.back(), 6.0f);
  for (int r = 0; r < ranks; ++r) EXPECT_EQ(d[r * 777 + 5], r);
  // Blocking calls between and after async ones keep their order.
  for (int i = 0; i < 20; ++i) ASSERT_EQ(xcclAllReduce(a.data(), a.data(), 1000, xcclFloat, xcclMax, comm), xcclSuccess);
  std::vector<double> x(5000, rank), y(5000, -1);
  xcclGroupStart();
  xcclSend(x.data(), x.size(), xcclDouble, (rank + 1) % ranks, comm);
  xcclRecv(y.data(), y.size(), xcclDouble, (rank + ranks - 1) % ranks, comm);
  ASSERT_EQ(xcclGroupEnd(), xcclSuccess) << xcclGetLastError();
  EXPECT_EQ(y[4999], double((rank + ranks - 1) % ranks));
}

TEST(XcclThreads, SharedMemory) { run_threads(3, nullptr, mixed_work); }
TEST(XcclThreads, TcpTwoRails) { run_threads(3, "127.0.0.1,127.0.0.2", mixed_work); }

TEST(XcclThreads, AbortFailsAPendingOperationAtOnce) {
  xcclUniqueId id;
  ASSERT_EQ(xcclGetUniqueId(&id), xcclSuccess);
  setenv("XCCL_TIMEOUT_MS", "60000", 1);
  std::atomic<bool> done{false};
  std::thread idle_rank([&] {  // joins, and only after rank 0 aborted tries a collective
    xcclComm_t comm = nullptr;
    ASSERT_EQ(xcclCommInitRank(&comm, 2, id, 1), xcclSuccess) << xcclGetLastError();
    while (!done) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::vector<float> b(100000, 1.0f);
    auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(xcclAllReduce(b.data(), b.data(), b.size(), xcclFloat, xcclSum, comm), xcclRemoteError);
    EXPECT_NE(std::string(xcclGetLastError()).find("aborted"), std::string::npos) << xcclGetLastError();
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2)) << "not the 60 s timeout";
    EXPECT_EQ(xcclCommDestroy(comm), xcclSuccess);
  });
  xcclComm_t comm = nullptr;
  ASSERT_EQ(xcclCommInitRank(&comm, 2, id, 0), xcclSuccess) << xcclGetLastError();
  std::vector<float> a(1000, 1.0f);
  xcclRequest_t req = nullptr;
  ASSERT_EQ(xcclAllReduceAsync(a.data(), a.data(), a.size(), xcclFloat, xcclSum, comm, &req), xcclSuccess);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(xcclTest(req), xcclInProgress);
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(xcclCommAbort(comm), xcclSuccess);
  EXPECT_EQ(xcclWait(req), xcclRemoteError);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  done = true;
  idle_rank.join();
  unsetenv("XCCL_TIMEOUT_MS");
}

}  // namespace
