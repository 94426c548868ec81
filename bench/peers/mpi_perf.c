/* mpi_perf: MPI_Allreduce / MPI_Allgather / MPI_Alltoall / MPI_Reduce_scatter_block measured like xccl-perf, for
 * bench/collectives_side_by_side.sh. Launch with mpirun; rank 0 prints xccl-perf's
 * out-of-place columns (float, sum). Each size is checked once: every rank sends rank+1. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr,
          "usage: mpirun -np N mpi_perf --collective all_reduce|all_gather|alltoall|reduce_scatter "
          "-b MIN -e MAX -f FACTOR -n ITERS -w WARMUP   (sizes like 4096, 4K, 256M, 1G)\n");
  MPI_Abort(MPI_COMM_WORLD, 2);
}

static size_t parse_bytes(const char* s) {
  char* end = NULL;
  double v = strtod(s, &end), mult = -1;
  if (!strcmp(end, "")) mult = 1;
  else if (!strcmp(end, "K") || !strcmp(end, "k")) mult = 1 << 10;
  else if (!strcmp(end, "M") || !strcmp(end, "m")) mult = 1 << 20;
  else if (!strcmp(end, "G") || !strcmp(end, "g")) mult = 1 << 30;
  if (end == s || mult < 0 || v < 0) usage();
  return (size_t)(v * mult);
}

enum { ALL_REDUCE, ALL_GATHER, ALLTOALL, REDUCE_SCATTER };

/* One call of the collective on `total` floats (for the others than all_reduce: all ranks' blocks). */
static void run_op(int coll, const float* send, float* recv, size_t total, int n) {
  int per_rank = (int)(total / (size_t)n);
  if (coll == ALL_REDUCE) MPI_Allreduce(send, recv, (int)total, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (coll == ALL_GATHER) MPI_Allgather(send, per_rank, MPI_FLOAT, recv, per_rank, MPI_FLOAT, MPI_COMM_WORLD);
  else if (coll == ALLTOALL) MPI_Alltoall(send, per_rank, MPI_FLOAT, recv, per_rank, MPI_FLOAT, MPI_COMM_WORLD);
  else MPI_Reduce_scatter_block(send, recv, per_rank, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, n = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &n);

  const char* name = "all_reduce";
  size_t min_bytes = 32 << 20, max_bytes = 32 << 20;
  double factor = 2;
  int iters = 20, warmup = 5;
  for (int i = 1; i < argc; ++i) {
    if (i + 1 >= argc) usage();
    const char *a = argv[i], *v = argv[++i];
    if (!strcmp(a, "--collective")) name = v;
    else if (!strcmp(a, "-b")) min_bytes = parse_bytes(v);
    else if (!strcmp(a, "-e")) max_bytes = parse_bytes(v);
    else if (!strcmp(a, "-f")) factor = atof(v);
    else if (!strcmp(a, "-n")) iters = atoi(v);
    else if (!strcmp(a, "-w")) warmup = atoi(v);
    else usage();
  }
  int coll = !strcmp(name, "all_reduce") ? ALL_REDUCE : !strcmp(name, "all_gather") ? ALL_GATHER
           : !strcmp(name, "alltoall")   ? ALLTOALL   : !strcmp(name, "reduce_scatter") ? REDUCE_SCATTER : -1;
  if (coll < 0 || iters < 1 || warmup < 0 || factor <= 1 || min_bytes > max_bytes) usage();

  const int scaled = coll != ALL_REDUCE; /* size = per-rank count * 4 B * nranks */
  const int reducing = coll == ALL_REDUCE || coll == REDUCE_SCATTER;
  const double bus = coll == ALL_REDUCE ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
  /* Buffers for the largest size, allocated and touched once; the input never changes. */
  size_t max_elems = (max_bytes / sizeof(float) / (size_t)n + 1) * (size_t)n;
  float* send = malloc(max_elems * sizeof(float));
  float* recv = calloc(max_elems, sizeof(float));
  if (!send || !recv) {
    fprintf(stderr, "mpi_perf: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (size_t i = 0; i < max_elems; ++i) send[i] = (float)(rank + 1);

  if (rank == 0) {
    printf("# mpi_perf: %s, %d ranks, float %s, %d iterations after %d warm-up\n", name, n,
           reducing ? "sum" : "none", iters, warmup);
    printf("#\n#%77s\n", "out-of-place");
    printf("#%11s %12s %8s %6s %6s %9s %7s %7s %6s\n", "size", "count", "type", "redop", "root", "time", "algbw",
           "busbw", "#wrong");
    printf("#%11s %12s %8s %6s %6s %9s %7s %7s %6s\n", "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)",
           "");
  }
  long long wrong_total = 0;
  for (size_t bytes = min_bytes; bytes <= max_bytes;
       bytes = bytes * factor > bytes + 1 ? (size_t)(bytes * factor) : bytes + 1) {
    size_t total = bytes / sizeof(float) / (size_t)(scaled ? n : 1) * (size_t)(scaled ? n : 1);
    size_t per_rank = scaled ? total / (size_t)n : total;
    /* Check once: all_reduce and reduce_scatter give n(n+1)/2 everywhere; block j of all_gather and
     * alltoall comes from rank j. */
    const size_t out = coll == REDUCE_SCATTER ? per_rank : total;
    for (size_t i = 0; i < out; ++i) recv[i] = -1.0f;
    run_op(coll, send, recv, total, n);
    long long wrong = 0;
    for (size_t i = 0; i < out; ++i) {
      float want = reducing ? (float)(n * (n + 1) / 2) : (float)(i / per_rank + 1);
      wrong += recv[i] != want;
    }
    for (int i = 0; i < warmup; ++i) run_op(coll, send, recv, total, n);
    MPI_Allreduce(MPI_IN_PLACE, &wrong, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD); /* also lines the ranks up */
    double start = MPI_Wtime();
    for (int i = 0; i < iters; ++i) run_op(coll, send, recv, total, n);
    double seconds = (MPI_Wtime() - start) / iters;
    MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD); /* the slowest rank sets the pace */
    wrong_total += wrong;
    if (rank == 0) {
      size_t size = total * sizeof(float);
      double algbw = (double)size / seconds / 1e9;
      printf(" %11zu %12zu %8s %6s %6s %9.2f %7.2f %7.2f %6lld\n", size, total, "float", reducing ? "sum" : "none",
             "-1", seconds * 1e6, algbw, algbw * bus, wrong);
      fflush(stdout);
    }
    if (bytes == max_bytes) break;
  }
  if (rank == 0) printf("# Out of bounds values : %lld %s\n#\n", wrong_total, wrong_total ? "FAILED" : "OK");
  free(send);
  free(recv);
  MPI_Finalize();
  return wrong_total ? 1 : 0;
}
