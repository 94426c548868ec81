/* Two ranks as threads of one process: each joins with the same unique id and sums its
 * rank + 1 into every element; prints the library version and exits 0 if both got 3. */
#include <pthread.h>
#include <stdio.h>
#include <xccl/xccl.h>

enum { kCount = 1 << 20 };
static xcclUniqueId id;
static float data[2][kCount];
static int ok[2];

static void* rank_main(void* arg) {
  int rank = (int)(long)arg;
  xcclComm_t comm;
  if (xcclCommInitRank(&comm, 2, id, rank) != xcclSuccess) {
    fprintf(stderr, "rank %d: init: %s\n", rank, xcclGetLastError());
    return NULL;
  }
  for (int i = 0; i < kCount; ++i) data[rank][i] = (float)(rank + 1);
  if (xcclAllReduce(data[rank], data[rank], kCount, xcclFloat, xcclSum, comm) != xcclSuccess) {
    fprintf(stderr, "rank %d: all-reduce: %s\n", rank, xcclGetLastError());
    return NULL;
  }
  ok[rank] = data[rank][0] == 3.0f && data[rank][kCount - 1] == 3.0f;
  xcclCommDestroy(comm);
  return NULL;
}

int main(void) {
  int version = 0;
  xcclGetVersion(&version);
  if (xcclGetUniqueId(&id) != xcclSuccess) {
    fprintf(stderr, "xcclGetUniqueId: %s\n", xcclGetLastError());
    return 1;
  }
  pthread_t t[2];
  for (long r = 0; r < 2; ++r) pthread_create(&t[r], NULL, rank_main, (void*)r);
  for (int r = 0; r < 2; ++r) pthread_join(t[r], NULL);
  printf("xccl %d: all-reduce of %d floats on 2 ranks %s\n", version, kCount, ok[0] && ok[1] ? "ok" : "WRONG");
  return ok[0] && ok[1] ? 0 : 1;
}
