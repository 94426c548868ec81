#include "ccl/comm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <sstream>

#include "ccl/log.h"

namespace xm::ccl {

void RequestState::finish(Status status) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
    status_ = std::move(status);
  }
  cv_.notify_all();
}

Status RequestState::wait() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_; });
  return status_;
}

bool RequestState::done() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

Status RequestState::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

namespace {

// Ranks with the same host id share memory: same machine (boot id) and same network
// namespace (the testbed's hosts are namespaces of one machine).
std::string host_id() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  struct stat st {};
  ::stat("/proc/self/ns/net", &st);
  return std::string(host) + "/" + boot + "/" + std::to_string(st.st_ino);
}

std::map<std::string, std::string> parse_blob(const std::string& blob) {
  std::map<std::string, std::string> kv;
  std::istringstream in(blob);
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) kv[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return kv;
}

}  // namespace

Result<std::unique_ptr<Comm>> Comm::create(const JobId& job, int rank, int ranks, std::unique_ptr<BootstrapRoot> root,
                                           const Settings& settings) {
  std::unique_ptr<Comm> c(new Comm);
  c->rank_ = rank;
  c->ranks_ = ranks;
  c->settings_ = settings;
  c->root_ = std::move(root);
  if (Status st = c->connect(job); !st) return Error{"rank " + std::to_string(rank) + ": " + st.message()};
  c->worker_ = std::thread([p = c.get()] { p->work(); });
  return c;
}

Status Comm::connect(const JobId& job) {
  auto deadline = net::Clock::now() + settings_.init_timeout;
  Result<BootstrapClient> boot = BootstrapClient::join(job, rank_, ranks_, deadline);
  if (!boot) return boot.error();
  bootstrap_ = std::make_unique<BootstrapClient>(std::move(boot).value());

  const std::string me = host_id();
  std::string blob = "host=" + me + "\npid=" + std::to_string(getpid()) + "\n";
  if (!settings_.shm_disable && ranks_ > 1) {
    Result<std::unique_ptr<ShmSegment>> seg = ShmSegment::create(ranks_, settings_.shm_fifo_bytes);
    if (!seg) return seg.error();
    own_segment_ = std::move(seg).value();
    blob += "shm=" + own_segment_->name() + "\n";
  }
  Result<std::vector<std::string>> all = bootstrap_->allgather(blob, deadline);
  if (!all) return all.error();

  link_table_.assign(ranks_, nullptr);
  peer_segments_.resize(ranks_);
  std::string shm_peers, other_peers;
  for (int p = 0; p < ranks_; ++p) {
    if (p == rank_) continue;
    auto peer = parse_blob((*all)[p]);
    bool local = peer["host"] == me && own_segment_ && !peer["shm"].empty();
    if (!local) {
      other_peers += " " + std::to_string(p);
      continue;
    }
    Result<std::unique_ptr<ShmSegment>> seg = ShmSegment::open(peer["shm"], ranks_, settings_.shm_fifo_bytes);
    if (!seg) return seg.error();
    peer_segments_[p] = std::move(seg).value();
    links_.push_back(std::make_unique<ShmLink>(peer_segments_[p]->fifo_from(rank_), own_segment_->fifo_from(p),
                                               pid_t(std::stol(peer["pid"]))));
    link_table_[p] = links_.back().get();
    shm_peers += " " + std::to_string(p);
  }
  if (!other_peers.empty())
    return Error{"ranks" + other_peers + " are on other hosts, and the TCP transport is not built yet"};
  // Every rank has mapped every segment it needs: the names can go.
  if (Status st = bootstrap_->barrier(deadline); !st) return st;
  if (own_segment_) own_segment_->unlink();
  XCCL_LOG(LogLevel::kInfo, Subsys::kInit, rank_,
           "rank " + std::to_string(rank_) + " of " + std::to_string(ranks_) + " ready; shared memory with ranks" +
               (shm_peers.empty() ? " none" : shm_peers) + ", FIFO " + std::to_string(settings_.shm_fifo_bytes >> 10) +
               " KiB per peer");
  return Status::Ok();
}

Comm::~Comm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

std::shared_ptr<RequestState> Comm::submit(Operation op) {
  std::shared_ptr<RequestState> request = op.request;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_.ok() || stopping_) {
      request->finish(failed_.ok() ? Status(Error{"communicator is shutting down"}) : failed_);
      return request;
    }
    queue_.push_back(std::move(op));
  }
  cv_.notify_all();
  return request;
}

Status Comm::run_blocking(Operation op) {
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!failed_.ok()) return failed_;
    if (stopping_) return Error{"communicator is shutting down"};
    if (busy_ || !queue_.empty()) {
      lock.unlock();
      return submit(std::move(op))->wait();
    }
    busy_ = true;
  }
  Status st = run(op);
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
    if (!st && failed_.ok()) failed_ = st;
  }
  cv_.notify_all();
  return st;
}

void Comm::abort() {
  cancel_ = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (failed_.ok()) failed_ = Error{"communicator aborted"};
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

Status Comm::async_error() const {
  std::lock_guard<std::mutex> lock(mu_);
  return failed_;
}

void Comm::work() {
  while (true) {
    Operation op;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return (stopping_ && !busy_) || (!queue_.empty() && !busy_); });
      if (queue_.empty()) return;
      op = std::move(queue_.front());
      queue_.pop_front();
      if (!failed_.ok()) {
        op.request->finish(failed_);
        continue;
      }
      busy_ = true;
    }
    Status st = run(op);
    {
      std::lock_guard<std::mutex> lock(mu_);
      busy_ = false;
      if (!st && failed_.ok()) failed_ = st;
    }
    cv_.notify_all();
    op.request->finish(st);
  }
}

Status Comm::run(Operation& op) {
  ExecOptions options{settings_.timeout, &cancel_};
  if (!op.group.empty()) {  // point to point: bytes, one user buffer per entry
    Schedule s;
    s.algorithm = "p2p";
    ExecBuffers b;
    for (const PointToPoint& p : op.group) {
      BufferId id = BufferId(Buffer::kUser + b.user.size());
      b.user.push_back(p.buffer);
      s.add(p.send ? send_step(p.peer, p.bytes, {id, 0}) : recv_step(p.peer, p.bytes, {id, 0}));
    }
    CollectiveArgs args;
    args.type = DataType::kUint8;
    args.rank = rank_;
    args.ranks = ranks_;
    return execute(s, args, b, link_table_, options);
  }
  op.args.rank = rank_;
  op.args.ranks = ranks_;
  op.args.chunk_bytes = settings_.chunk_bytes;
  Schedule s = make_schedule(op.args);
  size_t scratch = s.scratch_elements * size_of(op.args.type);
  if (scratch_.size() < scratch) scratch_.resize(scratch);
  XCCL_LOG(LogLevel::kTrace, Subsys::kColl, rank_,
           std::string(to_string(op.args.collective)) + " count " + std::to_string(op.args.count) + " " +
               to_string(op.args.type) + " algorithm " + s.algorithm + ", " + std::to_string(s.steps.size()) + " steps");
  ExecBuffers b{const_cast<std::byte*>(op.input), op.output, scratch_.data(), {}};
  return execute(s, op.args, b, link_table_, options);
}

}  // namespace xm::ccl
