// A training loop's reaction to losing a host, for the live testbed test: all-reduces until
// one fails, then, on the ranks not in XM_EXCLUDE (a comma list), xcclCommShrink past the
// excluded ranks and XM_AFTER more all-reduces on the survivors, each checked exactly.
// An excluded rank (the cut-off host's) only reports its error. Every rank exits 0 when it
// did its part, so the launcher stops nobody early.
#include <xccl/xccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<int> excluded_ranks() {
  std::vector<int> out;
  std::istringstream in(std::getenv("XM_EXCLUDE") ? std::getenv("XM_EXCLUDE") : "");
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(std::atoi(item.c_str()));
  return out;
}

// All-reduces of `value` until `limit` calls or one fails; false on a wrong sum.
bool run(xcclComm_t comm, int limit, float value, float want, int* done, bool* failed) {
  std::vector<float> x(1 << 18, value), y(x.size());
  *failed = false;
  for (*done = 0; *done < limit; ++*done) {
    if (xcclAllReduce(x.data(), y.data(), x.size(), xcclFloat, xcclSum, comm) != xcclSuccess) {
      *failed = true;
      return true;
    }
    for (float v : y)
      if (v != want) return false;
  }
  return true;
}

}  // namespace

int main() {
  xcclComm_t comm = nullptr;
  if (xcclCommInitFromEnv(&comm) != xcclSuccess) return std::fprintf(stderr, "init: %s\n", xcclGetLastError()), 1;
  int rank = 0, ranks = 0;
  xcclCommUserRank(comm, &rank);
  xcclCommCount(comm, &ranks);
  std::vector<int> gone = excluded_ranks();
  int done = 0;
  bool failed = false;
  if (!run(comm, 1000000, float(rank + 1), float(ranks * (ranks + 1) / 2), &done, &failed))
    return std::printf("rank %d: wrong sum\n", rank), 2;
  if (!failed) return std::printf("rank %d: nothing failed\n", rank), 3;
  std::printf("rank %d: all-reduce %d failed: %s\n", rank, done, xcclGetLastError());
  for (int r : gone)
    if (r == rank) {
      xcclCommAbort(comm);
      return 0;
    }
  auto start = std::chrono::steady_clock::now();
  xcclComm_t smaller = nullptr;
  if (xcclCommShrink(comm, gone.data(), int(gone.size()), &smaller) != xcclSuccess)
    return std::printf("rank %d: shrink: %s\n", rank, xcclGetLastError()), 4;
  double shrink_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  int survivors = 0, new_rank = 0;
  xcclCommCount(smaller, &survivors);
  xcclCommUserRank(smaller, &new_rank);
  float want = 0;  // the survivors' (old rank + 1), summed
  for (int r = 0; r < ranks; ++r) {
    bool out = false;
    for (int g : gone) out |= g == r;
    if (!out) want += float(r + 1);
  }
  // The survivors keep their old values: rank r still contributes r + 1.
  int after = std::getenv("XM_AFTER") ? std::atoi(std::getenv("XM_AFTER")) : 20;
  if (!run(smaller, after, float(rank + 1), want, &done, &failed))
    return std::printf("rank %d: wrong sum after the shrink\n", rank), 5;
  if (failed) return std::printf("rank %d: after the shrink: %s\n", rank, xcclGetLastError()), 6;
  std::printf("rank %d: shrunk in %.2f s, finished %d exact all-reduces on %d ranks as rank %d\n", rank, shrink_s, after,
              survivors, new_rank);
  xcclCommDestroy(smaller);
  xcclCommAbort(comm);
  return 0;
}
