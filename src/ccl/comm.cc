#include "ccl/comm.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cassert>
#include <fstream>
#include <map>
#include <sstream>

#include "ccl/calibrate.h"
#include "ccl/log.h"
#include "ccl/shm/cross_memory.h"

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

// How errors name a rank: its host and the addresses it is reached at.
std::string describe_rank(int rank, const std::map<std::string, std::string>& blob, const std::string& my_host) {
  std::string host = blob.count("host") ? blob.at("host") : "?";
  std::string where = host == my_host ? "this host" : "host " + host.substr(0, host.find('/'));
  std::string rails;
  if (blob.count("tcp"))
    if (Result<std::vector<Rail>> r = decode_rails(blob.at("tcp")); r)
      for (const Rail& rail : *r) rails += (rails.empty() ? ", rails " : ", ") + rail.host;
  std::string pid = blob.count("pid") ? ", pid " + blob.at("pid") : "";
  return "rank " + std::to_string(rank) + " (" + where + pid + rails + ")";
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
  if (Status st = c->tune(); !st) return Error{"rank " + std::to_string(rank) + ": " + st.message()};
  c->worker_ = std::thread([p = c.get()] { p->work(); });
  return c;
}

Result<std::unique_ptr<Comm>> Comm::shrink(const std::vector<int>& excluded) {
  std::vector<bool> out(ranks_, false);
  for (int r : excluded) out.at(size_t(r)) = true;  // checked by the caller (xcclCommShrink)
  assert(!out[rank_]);
  std::vector<int> members;
  for (int r = 0; r < ranks_; ++r)
    if (!out[r]) members.push_back(r);
  return regroup(members);
}

Result<std::unique_ptr<Comm>> Comm::regroup(const std::vector<int>& members) {
  auto me = std::find(members.begin(), members.end(), rank_);
  assert(me != members.end());
  const int new_rank = int(me - members.begin()), new_ranks = int(members.size()), host = members.front();
  JobId job{rendezvous_at_[host], secret_};
  std::unique_ptr<BootstrapRoot> root;
  if (host == rank_) {
    if (!rendezvous_)
      return Error{"rank " + std::to_string(rank_) +
                   " already hosted a shrink or split of this communicator: shrink or split the new one"};
    Result<std::unique_ptr<BootstrapRoot>> r =
        BootstrapRoot::adopt(std::move(rendezvous_), rendezvous_at_[host], secret_, settings_.init_timeout);
    if (!r) return r.error();
    root = std::move(r).value();
  }
  XCCL_LOG(LogLevel::kInfo, Subsys::kInit, rank_,
           "regrouping to " + std::to_string(new_ranks) + " of " + std::to_string(ranks_) + " ranks as rank " +
               std::to_string(new_rank) + ", meeting at rank " + std::to_string(host) + "'s " + job.root.str());
  return create(job, new_rank, new_ranks, std::move(root), settings_);
}

ExecOptions Comm::exec_options() {
  ExecOptions o{settings_.timeout, &cancel_, oversubscribed_, spread_.get(), &peer_names_};
  if (tcp_) o.background = [this] { tcp_->tend(); };  // from the first collective (calibration) on
  return o;
}

Status Comm::tune() {
  Result<AlgorithmOverrides> forced = parse_algorithm_overrides(settings_.algorithms);
  if (!forced) return forced.error();
  tuning_.forced = std::move(forced).value();
  CalibrationContext c{rank_, &layout_, link_table_, &executor_, bootstrap_.get(),
                       exec_options(),
                       net::Clock::now() + settings_.init_timeout};
  Result<CostModel> model = calibrate(c);
  if (!model) return model.error();
  tuning_.model = *model;
  XCCL_LOG(LogLevel::kInfo, Subsys::kTune, rank_,
           std::to_string(layout_.hosts()) + " host(s) × " + std::to_string(layout_.uniform_local_size()) +
               " rank(s); measured " + describe(tuning_.model) +
               (settings_.algorithms.empty() ? "" : "; XCCL_ALGO=" + settings_.algorithms));
  return Status::Ok();
}

Status Comm::connect(const JobId& job) {
  auto deadline = net::Clock::now() + settings_.init_timeout;
  Result<BootstrapClient> boot = BootstrapClient::join(job, rank_, ranks_, deadline);
  if (!boot) return boot.error();
  bootstrap_ = std::make_unique<BootstrapClient>(std::move(boot).value());

  // Round 1: where every rank lives and how to reach it over TCP.
  const std::string me = host_id();
  Result<std::vector<Rail>> nics = parse_rails(settings_.rails, bootstrap_->local_address());
  if (!nics) return nics.error();
  Result<std::vector<Rail>> rails = with_sockets_per_rail(*nics, settings_.tcp_sockets_per_rail);
  if (!rails) return rails.error();
  Result<std::vector<net::Fd>> listeners = listen_on_rails(*rails);
  if (!listeners) return listeners.error();
  // A spare bootstrap listener where the survivors of a shrink can meet (section 6).
  secret_ = job.secret;
  net::Endpoint spare{bootstrap_->local_address(), 0};
  Result<net::Fd> rendezvous = net::listen_on(spare.host, 0, &spare.port);
  if (!rendezvous) return Error{"spare bootstrap listener: " + rendezvous.error().message};
  rendezvous_ = std::move(rendezvous).value();
  // Peers may read this process's memory (probed below) before they learn it may.
  const bool cma = settings_.shm_cma && !settings_.shm_disable;
  if (cma) allow_cross_memory_reads();
  std::string blob = "host=" + me + "\npid=" + std::to_string(getpid()) + "\ntcp=" + encode_rails(*rails) +
                     "\nrendezvous=" + spare.str() +
                     (cma ? "\ncma=" + std::to_string(cross_memory_probe_address()) : "") + "\n";
  Result<std::vector<std::string>> all = bootstrap_->allgather(blob, deadline);
  if (!all) return all.error();

  // The ranks of this host share memory: one segment each, a FIFO per local rank (not
  // per rank of the job, which would cost gigabytes at scale).
  std::vector<std::map<std::string, std::string>> peers;
  for (const std::string& b : *all) peers.push_back(parse_blob(b));
  std::vector<std::string> hosts;
  for (const auto& kv : peers) hosts.push_back(kv.at("host"));
  layout_ = RankLayout::from_hosts(hosts);
  for (int p = 0; p < ranks_; ++p) {
    peer_names_.push_back(describe_rank(p, peers[p], me));
    Result<net::Endpoint> at = net::parse_endpoint(peers[p]["rendezvous"]);
    if (!at) return Error{"rank " + std::to_string(p) + " sent a bad rendezvous: " + at.error().message};
    rendezvous_at_.push_back(*at);
  }
  std::vector<int> local, remote;
  for (int p = 0; p < ranks_; ++p) {
    bool here = peers[p]["host"] == me;
    if (here) local.push_back(p);
    if (!here || settings_.shm_disable) {
      if (p != rank_) remote.push_back(p);
    }
  }
  oversubscribed_ = long(local.size()) > sysconf(_SC_NPROCESSORS_ONLN);
  tuning_.oversubscribed = oversubscribed_;
  const bool use_shm = !settings_.shm_disable && local.size() > 1;
  // Every rank of a host counts the same local ranks, so they agree on the FIFO size.
  if (settings_.shm_fifo_bytes == 0) settings_.shm_fifo_bytes = default_fifo_bytes(int(local.size()));
  tuning_.fifo_bytes = settings_.shm_fifo_bytes;
  tuning_.chunk_bytes = settings_.chunk_bytes;
  auto slot = [&](int rank) { return int(std::find(local.begin(), local.end(), rank) - local.begin()); };
  if (use_shm) {
    Result<std::unique_ptr<ShmSegment>> seg = ShmSegment::create(int(local.size()), settings_.shm_fifo_bytes);
    if (!seg) return seg.error();
    own_segment_ = std::move(seg).value();
  }
  // Which local peers' plain memory this rank can read (cross-memory attach).
  std::string reads;
  for (int p : use_shm ? local : std::vector<int>{})
    if (p != rank_ && peers[p].count("cma") &&
        can_read_memory_of(pid_t(std::stol(peers[p]["pid"])), std::stoull(peers[p]["cma"])))
      reads += "," + std::to_string(p);
  // Round 2: the segment names, and who reads whom.
  Result<std::vector<std::string>> round2 = bootstrap_->allgather(
      "segment=" + (own_segment_ ? own_segment_->name() : "") + "\nreads=" + reads + ",\n", deadline);
  if (!round2) return round2.error();
  std::vector<std::map<std::string, std::string>> shared;
  for (const std::string& b : *round2) shared.push_back(parse_blob(b));
  auto reads_memory_of = [&](int reader, int owner) {
    return shared[reader]["reads"].find("," + std::to_string(owner) + ",") != std::string::npos;
  };

  link_table_.assign(ranks_, nullptr);
  peer_segments_.resize(ranks_);
  std::string shm_peers;
  int cma_peers = 0;  // local peers that read this rank's plain buffers themselves
  for (int p : use_shm ? local : std::vector<int>{}) {
    if (p == rank_) continue;
    Result<std::unique_ptr<ShmSegment>> seg = ShmSegment::open(shared[p]["segment"], int(local.size()), settings_.shm_fifo_bytes);
    if (!seg) return seg.error();
    peer_segments_[p] = std::move(seg).value();
    const bool pulls = reads_memory_of(p, rank_);
    links_.push_back(std::make_unique<ShmLink>(peer_segments_[p]->fifo_from(slot(rank_)),
                                               own_segment_->fifo_from(slot(p)), pid_t(std::stol(peers[p]["pid"])),
                                               pulls));
    link_table_[p] = links_.back().get();
    shm_peers += " " + std::to_string(p);
    cma_peers += pulls ? 1 : 0;
  }
  if (Status st = connect_tcp_peers(job, *all, remote, std::move(rails).value(), std::move(listeners).value(), deadline);
      !st)
    return st;
  tuning_.links_in_memory = std::all_of(link_table_.begin(), link_table_.end(), [](Link* l) { return !l || l->in_memory(); });
  if (use_shm && settings_.cpu_spread) {
    std::vector<std::atomic<int32_t>*> cpus;
    for (int p : local) cpus.push_back(p == rank_ ? &own_segment_->header().cpu : &peer_segments_[p]->header().cpu);
    spread_ = std::make_unique<CpuSpread>(std::move(cpus), slot(rank_), rank_);
  }
  // Every rank has mapped every segment it needs: the names can go.
  if (Status st = bootstrap_->barrier(deadline); !st) return st;
  if (own_segment_) own_segment_->unlink();
  XCCL_LOG(LogLevel::kInfo, Subsys::kInit, rank_,
           "rank " + std::to_string(rank_) + " of " + std::to_string(ranks_) + " ready; shared memory with ranks" +
               (shm_peers.empty() ? " none"
                                  : shm_peers + ", FIFO " + std::to_string(settings_.shm_fifo_bytes >> 10) +
                                        " KiB per local peer, cross-memory reads by " + std::to_string(cma_peers) +
                                        " of " + std::to_string(local.size() - 1)) +
               (oversubscribed_ ? "; more ranks than cores here: waiting ranks yield at once" : ""));
  return Status::Ok();
}

Status Comm::connect_tcp_peers(const JobId& job, const std::vector<std::string>& blobs, const std::vector<int>& peers,
                               std::vector<Rail> rails, std::vector<net::Fd> listeners, net::Clock::time_point deadline) {
  TcpSetup setup;
  setup.rank = rank_;
  setup.rails = std::move(rails);
  setup.listeners = &listeners;
  setup.secret = job.secret;
  setup.deadline = deadline;
  setup.stripe_bytes = settings_.tcp_stripe_bytes;
  setup.window_bytes = settings_.tcp_window_bytes;
  setup.policy = settings_.rail_policy;
  setup.rail_advice = settings_.rail_advice;
  for (int p : peers) {
    Result<std::vector<Rail>> theirs = decode_rails(parse_blob(blobs[p])["tcp"]);
    if (!theirs) return Error{"rank " + std::to_string(p) + " sent bad rails: " + theirs.error().message};
    setup.peers[p] = std::move(theirs).value();
  }
  // Connections are made when a step first needs them (XCCL_RUNTIME_CONNECT=0: now).
  tcp_ = std::make_unique<TcpConnector>(setup);
  if (!settings_.runtime_connect)
    if (Status st = tcp_->connect_all(deadline); !st) return st;
  std::string names;
  for (int p : peers) {
    links_.push_back(std::make_unique<LazyTcpLink>(*tcp_, p));
    link_table_[p] = links_.back().get();
    names += " " + std::to_string(p);
  }
  if (!peers.empty())
    XCCL_LOG(LogLevel::kInfo, Subsys::kNet, rank_,
             "TCP to ranks" + names + " over " + std::to_string(setup.rails.size()) + " rail(s): " + encode_rails(setup.rails) +
                 ", rail-affine, striped in " + std::to_string(setup.stripe_bytes >> 10) + " KiB stripes by speed, " +
                 (settings_.runtime_connect ? "each connected when first needed" : "all connected at init"));
  return Status::Ok();
}

Comm::~Comm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  // What the last operations sent reaches the peers before the sockets close (an abort
  // has told them already that this rank is gone).
  if (tcp_ && !cancel_) tcp_->finish_all(net::Clock::now() + std::chrono::seconds(2));
  if (tcp_)
    for (auto& [peer, l] : tcp_->links()) {
      std::string counts;
      for (size_t r = 0; r < l->rails(); ++r)
        counts += " rail" + std::to_string(r) + " (" + rail_state_name(l->state(r)) + ", " + std::to_string(l->failures(r)) +
                  " failure(s)) sent " + std::to_string(l->bytes_sent(r)) + " B received " + std::to_string(l->bytes_received(r)) + " B;";
      XCCL_LOG(LogLevel::kInfo, Subsys::kNet, rank_, "TCP bytes with rank " + std::to_string(peer) + ":" + counts);
    }
}

std::shared_ptr<RequestState> Comm::submit(Operation op) {
  if (!op.request) op.request = std::make_shared<RequestState>();
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
  bool queued;
  {
    std::lock_guard<std::mutex> lock(mu_);
    busy_ = false;
    if (!st && failed_.ok()) failed_ = st;
    queued = !queue_.empty() || stopping_;
  }
  if (queued) cv_.notify_all();  // waking an idle worker for nothing costs a context switch
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
  // The worker is gone: tell every peer, so their pending steps with us fail now rather
  // than at their timeout.
  for (auto& link : links_) link->close();
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
      auto ready = [&] { return (stopping_ && !busy_) || (!queue_.empty() && !busy_); };
      // Between operations the TCP links still have work of their own: a failed rail's
      // stripes to resend, acknowledgements, rails to reconnect. Tending counts as busy,
      // so a blocking call arriving meanwhile queues for this thread instead of driving
      // the same links from its own.
      while (!ready() && !busy_ && tcp_ && tcp_->needs_tending()) {
        busy_ = true;
        lock.unlock();
        tcp_->tend();
        lock.lock();
        busy_ = false;
        cv_.wait_for(lock, std::chrono::milliseconds(10), ready);
      }
      cv_.wait(lock, ready);
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

const Plan& Comm::plan_for(const CollectiveArgs& a) {
  for (CachedPlan& c : plans_) {
    const CollectiveArgs& b = c.args;
    if (a.collective == b.collective && a.count == b.count && a.type == b.type && a.op == b.op && a.root == b.root &&
        a.in_place == b.in_place && a.chunk_bytes == b.chunk_bytes && a.relays == b.relays && a.shared_memory == b.shared_memory &&
        a.algorithm == b.algorithm)
      return *c.plan;
  }
  constexpr size_t kPlans = 16;
  if (plans_.size() == kPlans) plans_.erase(plans_.begin());
  plans_.push_back({a, std::make_unique<Plan>(make_schedule(a), ranks_)});
  XCCL_LOG(LogLevel::kInfo, Subsys::kColl, rank_,
           std::string(to_string(a.collective)) + " count " + std::to_string(a.count) + " " + to_string(a.type) +
               ": algorithm " + plans_.back().plan->schedule().algorithm + ", chunk " +
               std::to_string(a.chunk_bytes >> 10) + " KiB, " + std::to_string(plans_.back().plan->schedule().steps.size()) +
               " steps");
  return *plans_.back().plan;
}

Status Comm::run(Operation& op) {
  ExecOptions options = exec_options();
  if (op.point_to_point()) {  // bytes, one user buffer per entry
    Schedule s;
    s.algorithm = "p2p";
    ExecBuffers b;
    auto user_buffer = [&b](const std::byte* p) {
      b.user.push_back(const_cast<std::byte*>(p));
      return Region{BufferId(Buffer::kUser + b.user.size() - 1), 0};
    };
    for (const PointToPoint& p : op.group)
      s.add(p.send ? pull_send_step(p.peer, p.bytes, user_buffer(p.buffer)) : recv_step(p.peer, p.bytes, user_buffer(p.buffer)));
    for (const LocalCopy& c : op.copies) {
      Region from = user_buffer(c.from);
      s.add(copy_step(c.bytes, from, user_buffer(c.to)));
    }
    CollectiveArgs args;
    args.type = DataType::kUint8;
    args.rank = rank_;
    args.ranks = ranks_;
    return executor_.run(Plan(std::move(s), ranks_), args, b, link_table_, options);
  }
  op.args.rank = rank_;
  op.args.ranks = ranks_;
  op.args = tuned(op.args, layout_, tuning_);
  const Plan& plan = plan_for(op.args);
  Result<std::byte*> scratch = scratch_for(plan.schedule(), op.args.type);
  if (!scratch) return scratch.error();
  ExecBuffers b{const_cast<std::byte*>(op.input), op.output, *scratch, {}};
  return executor_.run(plan, op.args, b, link_table_, options);
}

Result<std::byte*> Comm::scratch_for(const Schedule& s, DataType type) {
  size_t bytes = s.scratch_elements * size_of(type);
  if (s.scratch_shared) return shared_scratch_.reserve(bytes);
  if (scratch_.size() < bytes) scratch_.resize(bytes);
  return scratch_.data();
}

}  // namespace xm::ccl
