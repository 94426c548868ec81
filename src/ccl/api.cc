// The C API (include/xccl/xccl.h): argument checks, error codes and messages, groups
// and requests, on top of Comm.
#include <xccl/xccl.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <mutex>
#include <string>
#include <utility>

#include "ccl/comm.h"
#include "ccl/log.h"
#include "ccl/shm/registered_memory.h"

struct xcclComm {
  std::unique_ptr<xm::ccl::Comm> impl;
};

struct xcclRequest {
  std::shared_ptr<xm::ccl::RequestState> state;
};

namespace {

using namespace xm::ccl;
using xm::Result;
using xm::Status;

thread_local std::string last_error;

xcclResult_t fail(xcclResult_t code, std::string message) {
  last_error = std::move(message);
  XCCL_LOG(LogLevel::kInfo, Subsys::kColl, -1, last_error);
  return code;
}

// Roots started by xcclGetUniqueId in this process, until a communicator adopts one.
std::mutex roots_mu;
std::vector<std::unique_ptr<BootstrapRoot>> hosted_roots;

std::unique_ptr<BootstrapRoot> adopt_root(const net::Endpoint& at) {
  std::lock_guard<std::mutex> lock(roots_mu);
  for (auto it = hosted_roots.begin(); it != hosted_roots.end(); ++it)
    if ((*it)->hosted_here() && (*it)->endpoint().port == at.port && (*it)->endpoint().host == at.host) {
      std::unique_ptr<BootstrapRoot> r = std::move(*it);
      hosted_roots.erase(it);
      return r;
    }
  return nullptr;
}

xcclResult_t init(xcclComm_t* out, const JobId& job, int rank, int ranks, std::unique_ptr<BootstrapRoot> root) {
  Result<Settings> settings = settings_from_environment();
  if (!settings) return fail(xcclInvalidArgument, settings.error().message);
  Result<std::unique_ptr<Comm>> comm = Comm::create(job, rank, ranks, std::move(root), *settings);
  if (!comm) return fail(xcclSystemError, comm.error().message);
  *out = new xcclComm{std::move(comm).value()};
  return xcclSuccess;
}

// Group state of this thread (as NCCL's groups are per thread): what the outermost
// xcclGroupEnd runs.
struct Group {
  xcclComm_t comm = nullptr;
  std::vector<Operation> collectives;  // run first, in call order
  Operation p2p;                       // then every send, receive and local copy together
};
thread_local int group_depth = 0;
thread_local Group group;

// Inside a group, every call must name the group's one communicator.
xcclResult_t join_group(xcclComm_t comm, const std::string& what) {
  if (group.comm && group.comm != comm) return fail(xcclInvalidUsage, what + ": one communicator per group");
  group.comm = comm;
  return xcclSuccess;
}

// The group's request comes from xcclGroupEndAsync, not from the calls inside it.
xcclResult_t refuse_async_in_group(const std::string& what, xcclRequest_t* request) {
  if (group_depth > 0 && request)
    return fail(xcclInvalidUsage, what + ": an ...Async call inside a group (xcclGroupEndAsync gives the group's request)");
  return xcclSuccess;
}

bool valid_type(xcclDataType_t t) { return int(t) >= 0 && int(t) < xcclNumTypes; }
bool valid_op(xcclRedOp_t o) { return int(o) >= 0 && int(o) < xcclNumOps; }

// Checks and queues one collective. `request` null: wait for it here.
xcclResult_t collective(Collective kind, const void* send, void* recv, size_t count, xcclDataType_t type,
                        xcclRedOp_t op, int root, xcclComm_t comm, xcclRequest_t* request) {
  std::string what = std::string("xccl ") + to_string(kind);
  if (!comm || !comm->impl) return fail(xcclInvalidArgument, what + ": comm is NULL");
  if (xcclResult_t r = refuse_async_in_group(what, request); r != xcclSuccess) return r;
  if (!valid_type(type)) return fail(xcclInvalidArgument, what + ": unknown data type " + std::to_string(int(type)));
  if (!valid_op(op)) return fail(xcclInvalidArgument, what + ": unknown reduction op " + std::to_string(int(op)));
  const int ranks = comm->impl->ranks(), rank = comm->impl->rank();
  if (root < 0 || root >= ranks)
    return fail(xcclInvalidArgument, what + ": root " + std::to_string(root) + " is not a rank of 0.." + std::to_string(ranks - 1));
  const size_t es = size_of(DataType(type));
  const bool scaled = kind == Collective::kAllGather || kind == Collective::kReduceScatter || kind == Collective::kAllToAll;
  if (count > std::numeric_limits<size_t>::max() / es / size_t(scaled ? ranks : 1))
    return fail(xcclInvalidArgument, what + ": count " + std::to_string(count) + " overflows the buffer size");
  bool needs_send = !(kind == Collective::kBroadcast && rank != root);
  bool needs_recv = !(kind == Collective::kReduce && rank != root);
  if (count > 0 && needs_send && !send) return fail(xcclInvalidArgument, what + ": sendbuff is NULL");
  if (count > 0 && needs_recv && !recv) return fail(xcclInvalidArgument, what + ": recvbuff is NULL");
  if (Status st = comm->impl->async_error(); !st)
    return fail(xcclRemoteError, what + ": communicator already failed: " + st.message());

  Operation o;
  o.args.collective = kind;
  o.args.count = count;
  o.args.type = DataType(type);
  o.args.op = RedOp(op);
  o.args.root = root;
  o.input = static_cast<const std::byte*>(send);
  o.output = static_cast<std::byte*>(recv);
  const std::byte* out = o.output;
  switch (kind) {
    case Collective::kAllGather: o.args.in_place = o.input == out + size_t(rank) * count * es; break;
    case Collective::kReduceScatter: o.args.in_place = out == o.input + size_t(rank) * count * es; break;
    default: o.args.in_place = o.input == out; break;
  }
  if (group_depth > 0) {
    if (xcclResult_t r = join_group(comm, what); r != xcclSuccess) return r;
    group.collectives.push_back(std::move(o));
    return xcclSuccess;
  }
  if (request) {
    *request = new xcclRequest{comm->impl->submit(std::move(o))};
    return xcclSuccess;
  }
  if (Status st = comm->impl->run_blocking(std::move(o)); !st) return fail(xcclRemoteError, what + ": " + st.message());
  return xcclSuccess;
}

// Runs `ops` in order: queued (the request is the last one's — operations finish in
// order, and a failure fails every later one) or here, stopping at the first failure.
xcclResult_t run_in_order(xcclComm_t comm, std::vector<Operation> ops, xcclRequest_t* request, const char* what) {
  if (request) {
    std::shared_ptr<RequestState> last;
    for (Operation& o : ops) last = comm->impl->submit(std::move(o));
    *request = new xcclRequest{std::move(last)};
    return xcclSuccess;
  }
  for (Operation& o : ops)
    if (Status st = comm->impl->run_blocking(std::move(o)); !st) return fail(xcclRemoteError, std::string(what) + ": " + st.message());
  return xcclSuccess;
}

xcclResult_t all_to_all_v(const void* send, const size_t* sendcounts, const size_t* sdispls, void* recv,
                          const size_t* recvcounts, const size_t* rdispls, xcclDataType_t type, xcclComm_t comm,
                          xcclRequest_t* request) {
  const std::string what = "xcclAllToAllv";
  if (!comm || !comm->impl) return fail(xcclInvalidArgument, what + ": comm is NULL");
  if (!sendcounts || !sdispls || !recvcounts || !rdispls) return fail(xcclInvalidArgument, what + ": a count or displacement array is NULL");
  if (!valid_type(type)) return fail(xcclInvalidArgument, what + ": unknown data type " + std::to_string(int(type)));
  if (xcclResult_t r = refuse_async_in_group(what, request); r != xcclSuccess) return r;
  const int ranks = comm->impl->ranks(), me = comm->impl->rank();
  const size_t es = size_of(DataType(type)), most = std::numeric_limits<size_t>::max() / es;
  if (sendcounts[me] != recvcounts[me])
    return fail(xcclInvalidArgument, what + ": rank " + std::to_string(me) + " sends itself " + std::to_string(sendcounts[me]) +
                                         " elements but receives " + std::to_string(recvcounts[me]));
  Operation o;  // its point-to-point part
  auto* in = static_cast<const std::byte*>(send);
  auto* out = static_cast<std::byte*>(recv);
  for (int p = 0; p < ranks; ++p) {
    const std::string peer = " for rank " + std::to_string(p);
    if (sendcounts[p] > most || sdispls[p] > most - sendcounts[p] || recvcounts[p] > most || rdispls[p] > most - recvcounts[p])
      return fail(xcclInvalidArgument, what + ": count or displacement" + peer + " overflows the buffer size");
    if (sendcounts[p] > 0 && !send) return fail(xcclInvalidArgument, what + ": sendbuff is NULL");
    if (recvcounts[p] > 0 && !recv) return fail(xcclInvalidArgument, what + ": recvbuff is NULL");
    if (p == me) {
      if (sendcounts[p] > 0) o.copies.push_back({in + sdispls[p] * es, out + rdispls[p] * es, sendcounts[p] * es});
      continue;
    }
    if (sendcounts[p] > 0) o.group.push_back({true, p, const_cast<std::byte*>(in) + sdispls[p] * es, sendcounts[p] * es});
    if (recvcounts[p] > 0) o.group.push_back({false, p, out + rdispls[p] * es, recvcounts[p] * es});
  }
  if (Status st = comm->impl->async_error(); !st)
    return fail(xcclRemoteError, what + ": communicator already failed: " + st.message());
  if (group_depth > 0) {
    if (xcclResult_t r = join_group(comm, what); r != xcclSuccess) return r;
    group.p2p.group.insert(group.p2p.group.end(), o.group.begin(), o.group.end());
    group.p2p.copies.insert(group.p2p.copies.end(), o.copies.begin(), o.copies.end());
    return xcclSuccess;
  }
  if (!o.point_to_point() && request) {  // nothing moves: a request that is already done
    auto done = std::make_shared<RequestState>();
    done->finish(Status::Ok());
    *request = new xcclRequest{std::move(done)};
    return xcclSuccess;
  }
  std::vector<Operation> ops;
  if (o.point_to_point()) ops.push_back(std::move(o));
  return run_in_order(comm, std::move(ops), request, what.c_str());
}

}  // namespace

extern "C" {

xcclResult_t xcclGetVersion(int* version) {
  if (!version) return fail(xcclInvalidArgument, "xcclGetVersion: version is NULL");
  *version = XCCL_MAJOR * 10000 + XCCL_MINOR * 100 + XCCL_PATCH;
  return xcclSuccess;
}

const char* xcclGetErrorString(xcclResult_t r) {
  switch (r) {
    case xcclSuccess: return "no error";
    case xcclSystemError: return "unhandled system error (sockets, shared memory)";
    case xcclInternalError: return "internal error - please report this issue to the xingmai developers";
    case xcclInvalidArgument: return "invalid argument";
    case xcclInvalidUsage: return "invalid usage";
    case xcclRemoteError: return "remote process exited, timed out or there was a network error";
    case xcclInProgress: return "xccl operation in progress";
    default: return "unknown result code";
  }
}

const char* xcclGetLastError(void) { return last_error.c_str(); }

xcclResult_t xcclGetUniqueId(xcclUniqueId* id) {
  if (!id) return fail(xcclInvalidArgument, "xcclGetUniqueId: id is NULL");
  Result<Settings> settings = settings_from_environment();
  if (!settings) return fail(xcclInvalidArgument, settings.error().message);
  std::string addr = settings->bootstrap_addr;
  uint16_t port = 0;
  if (addr.find(':') != std::string::npos && addr.front() != '[') {
    Result<net::Endpoint> e = net::parse_endpoint(addr);
    if (!e) return fail(xcclInvalidArgument, "XCCL_BOOTSTRAP_ADDR: " + e.error().message);
    addr = e->host, port = e->port;
  }
  net::Secret secret = net::random_secret();
  Result<std::unique_ptr<BootstrapRoot>> root = BootstrapRoot::start(addr, port, secret, settings->init_timeout);
  if (!root) return fail(xcclSystemError, "xcclGetUniqueId: " + root.error().message);
  std::string text = JobId{(*root)->endpoint(), secret}.encode();
  if (text.size() >= sizeof id->internal) return fail(xcclInternalError, "xcclGetUniqueId: id too long");
  std::memset(id->internal, 0, sizeof id->internal);
  std::memcpy(id->internal, text.data(), text.size());
  std::lock_guard<std::mutex> lock(roots_mu);
  hosted_roots.push_back(std::move(root).value());
  return xcclSuccess;
}

xcclResult_t xcclCommInitRank(xcclComm_t* comm, int nranks, xcclUniqueId id, int rank) {
  if (!comm) return fail(xcclInvalidArgument, "xcclCommInitRank: comm is NULL");
  if (nranks < 1) return fail(xcclInvalidArgument, "xcclCommInitRank: nranks " + std::to_string(nranks) + " < 1");
  if (rank < 0 || rank >= nranks)
    return fail(xcclInvalidArgument, "xcclCommInitRank: rank " + std::to_string(rank) + " is not in 0.." + std::to_string(nranks - 1));
  Result<JobId> job = JobId::decode(std::string(id.internal, strnlen(id.internal, sizeof id.internal)));
  if (!job) return fail(xcclInvalidArgument, "xcclCommInitRank: " + job.error().message);
  return init(comm, *job, rank, nranks, adopt_root(job->root));
}

xcclResult_t xcclCommInitFromEnv(xcclComm_t* comm) {
  if (!comm) return fail(xcclInvalidArgument, "xcclCommInitFromEnv: comm is NULL");
  Result<LaunchEnv> env = launch_env_from_environment();
  if (!env) return fail(xcclInvalidArgument, "xcclCommInitFromEnv: " + env.error().message);
  Result<net::Secret> secret = net::secret_from_hex(env->secret_hex);
  if (!secret) return fail(xcclInvalidArgument, "xcclCommInitFromEnv: XCCL_SECRET: " + secret.error().message);
  Result<Settings> settings = settings_from_environment();
  if (!settings) return fail(xcclInvalidArgument, settings.error().message);
  JobId job{{env->master_addr, env->master_port}, *secret};
  std::unique_ptr<BootstrapRoot> root;
  if (env->rank == 0) {
    Result<std::unique_ptr<BootstrapRoot>> r =
        BootstrapRoot::start(env->master_addr, env->master_port, *secret, settings->init_timeout);
    if (!r) return fail(xcclSystemError, "xcclCommInitFromEnv: rank 0 cannot host the bootstrap: " + r.error().message);
    root = std::move(r).value();
  }
  XCCL_LOG(LogLevel::kInfo, Subsys::kInit, env->rank,
           "launched by " + env->launcher + ": rank " + std::to_string(env->rank) + " of " + std::to_string(env->ranks) +
               ", bootstrap at " + job.root.str());
  return init(comm, job, env->rank, env->ranks, std::move(root));
}

xcclResult_t xcclCommDestroy(xcclComm_t comm) {
  if (!comm) return fail(xcclInvalidArgument, "xcclCommDestroy: comm is NULL");
  delete comm;
  return xcclSuccess;
}

xcclResult_t xcclCommAbort(xcclComm_t comm) {
  if (!comm) return fail(xcclInvalidArgument, "xcclCommAbort: comm is NULL");
  comm->impl->abort();
  delete comm;
  return xcclSuccess;
}

xcclResult_t xcclCommShrink(xcclComm_t comm, const int* excludeRanksList, int excludeRanksCount, xcclComm_t* newcomm) {
  if (!comm || !newcomm) return fail(xcclInvalidArgument, "xcclCommShrink: comm or newcomm is NULL");
  if (excludeRanksCount < 0 || (excludeRanksCount > 0 && !excludeRanksList))
    return fail(xcclInvalidArgument, "xcclCommShrink: excludeRanksCount " + std::to_string(excludeRanksCount) +
                                         (excludeRanksCount < 0 ? " < 0" : " with a NULL list"));
  std::vector<int> excluded(excludeRanksList, excludeRanksList + excludeRanksCount);
  for (int r : excluded)
    if (r < 0 || r >= comm->impl->ranks())
      return fail(xcclInvalidArgument, "xcclCommShrink: rank " + std::to_string(r) + " is not in 0.." +
                                           std::to_string(comm->impl->ranks() - 1));
  if (std::find(excluded.begin(), excluded.end(), comm->impl->rank()) != excluded.end())
    return fail(xcclInvalidArgument, "xcclCommShrink: rank " + std::to_string(comm->impl->rank()) +
                                         " is in its own exclude list (excluded ranks do not call it)");
  Result<std::unique_ptr<Comm>> shrunk = comm->impl->shrink(excluded);
  if (!shrunk) return fail(xcclSystemError, "xcclCommShrink: " + shrunk.error().message);
  *newcomm = new xcclComm{std::move(shrunk).value()};
  return xcclSuccess;
}

xcclResult_t xcclCommSplit(xcclComm_t comm, int color, int key, xcclComm_t* newcomm) {
  if (!comm || !comm->impl || !newcomm) return fail(xcclInvalidArgument, "xcclCommSplit: comm or newcomm is NULL");
  if (color < 0 && color != XCCL_SPLIT_NOCOLOR)
    return fail(xcclInvalidArgument, "xcclCommSplit: color " + std::to_string(color) + " < 0 (XCCL_SPLIT_NOCOLOR is -1)");
  if (group_depth > 0) return fail(xcclInvalidUsage, "xcclCommSplit inside a group");
  *newcomm = nullptr;
  const int ranks = comm->impl->ranks(), me = comm->impl->rank();
  std::vector<int32_t> mine{color, key}, all(2 * size_t(ranks));
  if (xcclResult_t r = xcclAllGather(mine.data(), all.data(), 2, xcclInt32, comm); r != xcclSuccess) return r;
  if (color == XCCL_SPLIT_NOCOLOR) return xcclSuccess;
  std::vector<int> members;
  for (int r = 0; r < ranks; ++r)
    if (all[2 * r] == color) members.push_back(r);
  std::stable_sort(members.begin(), members.end(), [&](int a, int b) { return all[2 * a + 1] < all[2 * b + 1]; });
  Result<std::unique_ptr<Comm>> part = comm->impl->regroup(members);
  if (!part) return fail(xcclSystemError, "xcclCommSplit: rank " + std::to_string(me) + ", color " + std::to_string(color) + ": " + part.error().message);
  *newcomm = new xcclComm{std::move(part).value()};
  return xcclSuccess;
}

xcclResult_t xcclCommGetAsyncError(xcclComm_t comm, xcclResult_t* async_error) {
  if (!comm || !async_error) return fail(xcclInvalidArgument, "xcclCommGetAsyncError: NULL argument");
  Status st = comm->impl->async_error();
  *async_error = st.ok() ? xcclSuccess : xcclRemoteError;
  if (!st.ok()) last_error = st.message();
  return xcclSuccess;
}

xcclResult_t xcclCommRailCount(const xcclComm_t comm, int peer, int* nrails) {
  if (!comm || !nrails) return fail(xcclInvalidArgument, "xcclCommRailCount: NULL argument");
  if (peer < 0 || peer >= comm->impl->ranks())
    return fail(xcclInvalidArgument, "xcclCommRailCount: peer " + std::to_string(peer) + " is not in 0.." +
                                         std::to_string(comm->impl->ranks() - 1));
  const xm::ccl::TcpLink* link = comm->impl->tcp_link(peer);
  *nrails = link ? int(link->rails()) : 0;
  return xcclSuccess;
}

xcclResult_t xcclCommGetRailInfo(const xcclComm_t comm, int peer, int rail, xcclRailInfo_t* info) {
  int nrails = 0;
  if (!info) return fail(xcclInvalidArgument, "xcclCommGetRailInfo: info is NULL");
  if (xcclResult_t r = xcclCommRailCount(comm, peer, &nrails); r != xcclSuccess) return r;
  if (rail < 0 || rail >= nrails)
    return fail(xcclInvalidArgument, "xcclCommGetRailInfo: rail " + std::to_string(rail) + " of " + std::to_string(nrails) +
                                         " to rank " + std::to_string(peer));
  const xm::ccl::TcpLink* link = comm->impl->tcp_link(peer);
  info->state = xcclRailState_t(link->state(size_t(rail)));
  info->bytesSent = link->bytes_sent(size_t(rail));
  info->bytesReceived = link->bytes_received(size_t(rail));
  info->failures = link->failures(size_t(rail));
  return xcclSuccess;
}

xcclResult_t xcclCommCount(const xcclComm_t comm, int* count) {
  if (!comm || !count) return fail(xcclInvalidArgument, "xcclCommCount: NULL argument");
  *count = comm->impl->ranks();
  return xcclSuccess;
}

xcclResult_t xcclCommUserRank(const xcclComm_t comm, int* rank) {
  if (!comm || !rank) return fail(xcclInvalidArgument, "xcclCommUserRank: NULL argument");
  *rank = comm->impl->rank();
  return xcclSuccess;
}

xcclResult_t xcclMemAlloc(void** ptr, size_t size) {
  if (!ptr) return fail(xcclInvalidArgument, "xcclMemAlloc: ptr is NULL");
  Result<void*> p = registered_alloc(size);
  if (!p) return fail(size == 0 ? xcclInvalidArgument : xcclSystemError, "xcclMemAlloc: " + p.error().message);
  *ptr = *p;
  return xcclSuccess;
}

xcclResult_t xcclMemFree(void* ptr) {
  if (!ptr) return xcclSuccess;
  if (Status st = registered_free(ptr); !st) return fail(xcclInvalidArgument, "xcclMemFree: " + st.message());
  return xcclSuccess;
}

xcclResult_t xcclWait(xcclRequest_t request) {
  if (!request) return fail(xcclInvalidArgument, "xcclWait: request is NULL");
  Status st = request->state->wait();
  delete request;
  return st.ok() ? xcclSuccess : fail(xcclRemoteError, st.message());
}

xcclResult_t xcclTest(xcclRequest_t request) {
  if (!request) return fail(xcclInvalidArgument, "xcclTest: request is NULL");
  if (!request->state->done()) return xcclInProgress;
  Status st = request->state->status();
  delete request;
  return st.ok() ? xcclSuccess : fail(xcclRemoteError, st.message());
}

xcclResult_t xcclAllReduce(const void* s, void* r, size_t n, xcclDataType_t t, xcclRedOp_t o, xcclComm_t c) {
  return collective(Collective::kAllReduce, s, r, n, t, o, 0, c, nullptr);
}
xcclResult_t xcclBroadcast(const void* s, void* r, size_t n, xcclDataType_t t, int root, xcclComm_t c) {
  return collective(Collective::kBroadcast, s, r, n, t, xcclSum, root, c, nullptr);
}
xcclResult_t xcclReduce(const void* s, void* r, size_t n, xcclDataType_t t, xcclRedOp_t o, int root, xcclComm_t c) {
  return collective(Collective::kReduce, s, r, n, t, o, root, c, nullptr);
}
xcclResult_t xcclAllGather(const void* s, void* r, size_t n, xcclDataType_t t, xcclComm_t c) {
  return collective(Collective::kAllGather, s, r, n, t, xcclSum, 0, c, nullptr);
}
xcclResult_t xcclReduceScatter(const void* s, void* r, size_t n, xcclDataType_t t, xcclRedOp_t o, xcclComm_t c) {
  return collective(Collective::kReduceScatter, s, r, n, t, o, 0, c, nullptr);
}
xcclResult_t xcclAllToAll(const void* s, void* r, size_t n, xcclDataType_t t, xcclComm_t c) {
  return collective(Collective::kAllToAll, s, r, n, t, xcclSum, 0, c, nullptr);
}

xcclResult_t xcclAllReduceAsync(const void* s, void* r, size_t n, xcclDataType_t t, xcclRedOp_t o, xcclComm_t c,
                                xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclAllReduceAsync: request is NULL");
  return collective(Collective::kAllReduce, s, r, n, t, o, 0, c, q);
}
xcclResult_t xcclBroadcastAsync(const void* s, void* r, size_t n, xcclDataType_t t, int root, xcclComm_t c,
                                xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclBroadcastAsync: request is NULL");
  return collective(Collective::kBroadcast, s, r, n, t, xcclSum, root, c, q);
}
xcclResult_t xcclReduceAsync(const void* s, void* r, size_t n, xcclDataType_t t, xcclRedOp_t o, int root, xcclComm_t c,
                             xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclReduceAsync: request is NULL");
  return collective(Collective::kReduce, s, r, n, t, o, root, c, q);
}
xcclResult_t xcclAllGatherAsync(const void* s, void* r, size_t n, xcclDataType_t t, xcclComm_t c, xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclAllGatherAsync: request is NULL");
  return collective(Collective::kAllGather, s, r, n, t, xcclSum, 0, c, q);
}
xcclResult_t xcclReduceScatterAsync(const void* s, void* r, size_t n, xcclDataType_t t, xcclRedOp_t o, xcclComm_t c,
                                    xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclReduceScatterAsync: request is NULL");
  return collective(Collective::kReduceScatter, s, r, n, t, o, 0, c, q);
}
xcclResult_t xcclAllToAllAsync(const void* s, void* r, size_t n, xcclDataType_t t, xcclComm_t c, xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclAllToAllAsync: request is NULL");
  return collective(Collective::kAllToAll, s, r, n, t, xcclSum, 0, c, q);
}

xcclResult_t xcclAllToAllv(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc, const size_t* rd,
                           xcclDataType_t t, xcclComm_t c) {
  return all_to_all_v(s, sc, sd, r, rc, rd, t, c, nullptr);
}
xcclResult_t xcclAllToAllvAsync(const void* s, const size_t* sc, const size_t* sd, void* r, const size_t* rc,
                                const size_t* rd, xcclDataType_t t, xcclComm_t c, xcclRequest_t* q) {
  if (!q) return fail(xcclInvalidArgument, "xcclAllToAllvAsync: request is NULL");
  return all_to_all_v(s, sc, sd, r, rc, rd, t, c, q);
}

static xcclResult_t point_to_point(bool send, void* buf, size_t count, xcclDataType_t type, int peer, xcclComm_t comm) {
  const char* what = send ? "xcclSend" : "xcclRecv";
  if (!comm || !comm->impl) return fail(xcclInvalidArgument, std::string(what) + ": comm is NULL");
  if (!valid_type(type)) return fail(xcclInvalidArgument, std::string(what) + ": unknown data type");
  int ranks = comm->impl->ranks();
  if (peer < 0 || peer >= ranks || peer == comm->impl->rank())
    return fail(xcclInvalidArgument, std::string(what) + ": peer " + std::to_string(peer) + " is not another rank of 0.." +
                                         std::to_string(ranks - 1));
  size_t es = size_of(DataType(type));
  if (count > std::numeric_limits<size_t>::max() / es)
    return fail(xcclInvalidArgument, std::string(what) + ": count overflows the buffer size");
  if (count > 0 && !buf) return fail(xcclInvalidArgument, std::string(what) + ": buffer is NULL");
  PointToPoint p{send, peer, static_cast<std::byte*>(buf), count * es};
  if (group_depth > 0) {
    if (xcclResult_t r = join_group(comm, what); r != xcclSuccess) return r;
    group.p2p.group.push_back(p);
    return xcclSuccess;
  }
  Operation o;
  o.group = {p};
  if (Status st = comm->impl->run_blocking(std::move(o)); !st)
    return fail(xcclRemoteError, std::string(what) + ": " + st.message());
  return xcclSuccess;
}

xcclResult_t xcclSend(const void* s, size_t n, xcclDataType_t t, int peer, xcclComm_t c) {
  return point_to_point(true, const_cast<void*>(s), n, t, peer, c);
}
xcclResult_t xcclRecv(void* r, size_t n, xcclDataType_t t, int peer, xcclComm_t c) {
  return point_to_point(false, r, n, t, peer, c);
}

xcclResult_t xcclGroupStart(void) {
  ++group_depth;
  return xcclSuccess;
}

xcclResult_t xcclGroupEndAsync(xcclRequest_t* request) {
  if (group_depth == 0) return fail(xcclInvalidUsage, "xcclGroupEnd without xcclGroupStart");
  if (--group_depth > 0) {
    if (request) *request = nullptr;
    return xcclSuccess;
  }
  Group g = std::exchange(group, Group{});
  std::vector<Operation> ops = std::move(g.collectives);
  if (g.p2p.point_to_point()) ops.push_back(std::move(g.p2p));
  if (!g.comm || ops.empty()) {
    if (request) *request = nullptr;
    return xcclSuccess;
  }
  return run_in_order(g.comm, std::move(ops), request, "xcclGroupEnd");
}

xcclResult_t xcclGroupEnd(void) { return xcclGroupEndAsync(nullptr); }

}  // extern "C"
