/* xccl: the collective library of xingmai. The public contract; nothing else is public.
 *
 * Modelled on NCCL so its users feel at home: a unique id (or the launcher's
 * environment) and xcclCommInitRank make a communicator; collectives take send and
 * receive buffers, a count, a type and (for reductions) an operator. Buffers are host
 * memory. Differences from NCCL: there are no CUDA streams; every operation has an
 * ...Async form that returns an xcclRequest_t to wait on or test, and the plain form
 * blocks until the operation completes.
 *
 * Threads: one communicator may be used by one application thread at a time (as in
 * NCCL); different communicators are independent. Operations on a communicator run in
 * the order they were called. Errors: every call returns an xcclResult_t; the message
 * for the last failed call on this thread is xcclGetLastError(). A communicator whose
 * peer failed reports it through xcclCommGetAsyncError and every later call.
 */
#ifndef XCCL_XCCL_H_
#define XCCL_XCCL_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define XCCL_MAJOR 0
#define XCCL_MINOR 1
#define XCCL_PATCH 0
#define XCCL_UNIQUE_ID_BYTES 128

typedef enum {
  xcclSuccess = 0,
  xcclSystemError = 2,       /* an OS call failed (sockets, shared memory) */
  xcclInternalError = 3,     /* a bug in xccl */
  xcclInvalidArgument = 4,   /* a bad pointer, count, type, op, rank or root */
  xcclInvalidUsage = 5,      /* a call out of order (e.g. GroupEnd without GroupStart) */
  xcclRemoteError = 6,       /* a peer died, timed out, or broke the protocol */
  xcclInProgress = 7,        /* xcclTest: not finished yet */
  xcclNumResults = 8,
  xcclResultMinValue = -0x7fffffff - 1, xcclResultMaxValue = 0x7fffffff
} xcclResult_t;

typedef enum {
  xcclInt8 = 0, xcclChar = 0,
  xcclUint8 = 1,
  xcclInt32 = 2, xcclInt = 2,
  xcclInt64 = 3,
  xcclFloat16 = 4, xcclHalf = 4,
  xcclBfloat16 = 5,
  xcclFloat32 = 6, xcclFloat = 6,
  xcclFloat64 = 7, xcclDouble = 7,
  xcclNumTypes = 8,
  /* Every int is a value of these enums (bad ones are reported, never undefined). */
  xcclDataTypeMinValue = -0x7fffffff - 1, xcclDataTypeMaxValue = 0x7fffffff
} xcclDataType_t;

typedef enum {
  xcclSum = 0, xcclProd = 1, xcclMin = 2, xcclMax = 3, xcclAvg = 4, xcclNumOps = 5,
  xcclRedOpMinValue = -0x7fffffff - 1, xcclRedOpMaxValue = 0x7fffffff
} xcclRedOp_t;

typedef struct { char internal[XCCL_UNIQUE_ID_BYTES]; } xcclUniqueId;
typedef struct xcclComm* xcclComm_t;
typedef struct xcclRequest* xcclRequest_t;

/* Library version as MAJOR*10000 + MINOR*100 + PATCH. */
xcclResult_t xcclGetVersion(int* version);
const char* xcclGetErrorString(xcclResult_t result);
/* A sentence about the last failed call on this thread ("" if none). */
const char* xcclGetLastError(void);

/* Makes the job's id: where the bootstrap root listens (started in this process, which
 * must stay alive while the communicator is built) and the job's secret. Send it to
 * every rank out of band. XCCL_BOOTSTRAP_ADDR (host[:port]) chooses the address;
 * default the first address of XCCL_RAILS (this host's first NIC), else 127.0.0.1, and
 * any free port. */
xcclResult_t xcclGetUniqueId(xcclUniqueId* id);

/* Joins rank `rank` of `nranks`. Blocks until every rank joined (or XCCL_INIT_TIMEOUT_MS). */
xcclResult_t xcclCommInitRank(xcclComm_t* comm, int nranks, xcclUniqueId id, int rank);

/* Joins using the launcher's environment: torchrun (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT), Open MPI's mpirun (OMPI_COMM_WORLD_RANK/SIZE) or SLURM's srun
 * (SLURM_PROCID/NTASKS); rank 0 hosts the bootstrap root at MASTER_ADDR:MASTER_PORT
 * (XCCL_MASTER_ADDR/PORT override). The job's secret comes from XCCL_SECRET (64 hex
 * digits) or the file named by XCCL_SECRET_FILE, the same on every rank. */
xcclResult_t xcclCommInitFromEnv(xcclComm_t* comm);

/* Waits for this rank's pending operations, then frees the communicator. */
xcclResult_t xcclCommDestroy(xcclComm_t comm);
/* Stops at once: pending operations fail, and peers' operations that need this rank
 * fail at once too ("aborted"), not at their timeout. Frees comm. */
xcclResult_t xcclCommAbort(xcclComm_t comm);
xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t* async_error);
/* A new communicator of comm's ranks minus the excludeRanksCount ranks listed (NCCL 2.27's
 * ncclCommShrink): the survivors, renumbered in order, made without a new unique id — they
 * meet at the lowest survivor, which hosts the bootstrap on a listener it opened at init.
 * Every survivor calls it with the same list (an excluded rank must not); typically after
 * an operation failed with xcclRemoteError naming a dead rank. comm stays valid (destroy or
 * abort it); *newcomm gets fresh shared-memory and TCP links. */
xcclResult_t xcclCommShrink(xcclComm_t comm, const int* excludeRanksList, int excludeRanksCount, xcclComm_t* newcomm);
/* Splits comm into disjoint communicators, one per color (NCCL's ncclCommSplit): every
 * rank of comm calls it; ranks passing the same color join one new communicator, numbered
 * by key (ties: by their rank in comm); color XCCL_SPLIT_NOCOLOR joins none (*newcomm =
 * NULL). Collective over comm, so it is called where the other collectives are; no new
 * unique id: each new communicator meets at its first rank's spare listener. */
#define XCCL_SPLIT_NOCOLOR (-1)
xcclResult_t xcclCommSplit(xcclComm_t comm, int color, int key, xcclComm_t* newcomm);
/* A TCP rail's state with one peer. Rails fail over inside a collective and come back by
 * themselves: a failed rail is down, then probing (reconnecting), then held (connected,
 * carrying heartbeats only) until it has stayed up, then up again. */
typedef enum { xcclRailUp = 0, xcclRailDown = 1, xcclRailProbing = 2, xcclRailHeld = 3 } xcclRailState_t;
typedef struct {
  xcclRailState_t state;
  unsigned long long bytesSent, bytesReceived; /* on this rail, frame headers included */
  unsigned failures;                           /* times it was declared down */
} xcclRailInfo_t;
/* *nrails: how many rails connect this rank to peer over TCP (0: none yet, or the peer is
 * reached through shared memory). Callable from any thread while operations run. */
xcclResult_t xcclCommRailCount(const xcclComm_t comm, int peer, int* nrails);
xcclResult_t xcclCommGetRailInfo(const xcclComm_t comm, int peer, int rail, xcclRailInfo_t* info);
xcclResult_t xcclCommCount(const xcclComm_t comm, int* count);
xcclResult_t xcclCommUserRank(const xcclComm_t comm, int* rank);

/* Registered memory. Buffers from xcclMemAlloc can be read in place by the other
 * ranks of this host, so collectives whose send and receive buffers lie in them move
 * large messages over shared memory with one copy fewer each way (the role of NCCL's
 * ncclMemAlloc and buffer registration). Any buffer works with any call; registered
 * ones are only faster. Thread-safe. Free with xcclMemFree. */
xcclResult_t xcclMemAlloc(void** ptr, size_t size);
xcclResult_t xcclMemFree(void* ptr);

/* Requests: the handle of an ...Async operation. Wait blocks until it finishes and
 * frees it; Test frees it once it reports completion (xcclSuccess or an error) and
 * returns xcclInProgress before. */
xcclResult_t xcclWait(xcclRequest_t request);
xcclResult_t xcclTest(xcclRequest_t request);

/* Collectives. Counts are in elements, per rank, as in NCCL: all-gather sends `count`
 * and receives nranks*count; reduce-scatter receives `count` of nranks*count sent;
 * all-to-all sends and receives nranks blocks of `count`. In place: recvbuff ==
 * sendbuff (all-gather: sendbuff == recvbuff + rank*count; reduce-scatter:
 * recvbuff == sendbuff + rank*count). */
xcclResult_t xcclAllReduce(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclRedOp_t op, xcclComm_t comm);
xcclResult_t xcclBroadcast(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, int root, xcclComm_t comm);
xcclResult_t xcclReduce(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclRedOp_t op, int root, xcclComm_t comm);
xcclResult_t xcclAllGather(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclComm_t comm);
xcclResult_t xcclReduceScatter(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclRedOp_t op, xcclComm_t comm);
xcclResult_t xcclAllToAll(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclComm_t comm);

xcclResult_t xcclAllReduceAsync(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclRedOp_t op, xcclComm_t comm, xcclRequest_t* request);
xcclResult_t xcclBroadcastAsync(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, int root, xcclComm_t comm, xcclRequest_t* request);
xcclResult_t xcclReduceAsync(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclRedOp_t op, int root, xcclComm_t comm, xcclRequest_t* request);
xcclResult_t xcclAllGatherAsync(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclComm_t comm, xcclRequest_t* request);
xcclResult_t xcclReduceScatterAsync(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclRedOp_t op, xcclComm_t comm, xcclRequest_t* request);
xcclResult_t xcclAllToAllAsync(const void* sendbuff, void* recvbuff, size_t count, xcclDataType_t type, xcclComm_t comm, xcclRequest_t* request);

/* Uneven all-to-all (MPI_Alltoallv): sendcounts[p] elements from sendbuff + sdispls[p] go
 * to rank p, which receives them at recvbuff + rdispls[me] as its recvcounts[me]; all in
 * elements, nranks entries each. sendcounts[p] on this rank must equal recvcounts[me] on
 * rank p (a mismatch is an error within XCCL_TIMEOUT_MS). Blocks must not overlap. */
xcclResult_t xcclAllToAllv(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls, void* recvbuff,
                           const size_t* recvcounts, const size_t* rdispls, xcclDataType_t type, xcclComm_t comm);
xcclResult_t xcclAllToAllvAsync(const void* sendbuff, const size_t* sendcounts, const size_t* sdispls, void* recvbuff,
                                const size_t* recvcounts, const size_t* rdispls, xcclDataType_t type, xcclComm_t comm,
                                xcclRequest_t* request);

/* Point to point, and groups. Inside xcclGroupStart/xcclGroupEnd calls are queued and run
 * at xcclGroupEnd: first the group's collectives (plain forms only), in the order they
 * were called, then all its sends and receives together (so a rank may send to and
 * receive from the same peer, in any order). Every rank of a communicator must call the
 * same collectives in the same order; sends and receives match per peer in call order.
 * Outside a group each call runs alone. xcclGroupEnd blocks until the whole group
 * completes; xcclGroupEndAsync returns one request for it instead. */
xcclResult_t xcclSend(const void* sendbuff, size_t count, xcclDataType_t type, int peer, xcclComm_t comm);
xcclResult_t xcclRecv(void* recvbuff, size_t count, xcclDataType_t type, int peer, xcclComm_t comm);
xcclResult_t xcclGroupStart(void);
xcclResult_t xcclGroupEnd(void);
xcclResult_t xcclGroupEndAsync(xcclRequest_t* request);

#ifdef __cplusplus
}
#endif

#endif /* XCCL_XCCL_H_ */
