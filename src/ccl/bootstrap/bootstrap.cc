#include "ccl/bootstrap/bootstrap.h"

#include <arpa/inet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <sstream>

#include "ccl/log.h"
#include "ccl/net/gate.h"

namespace xm::ccl {
namespace {

constexpr uint32_t kHello = 0x31534258;  // "XBS1"
constexpr uint32_t kMaxRanks = 1u << 20;
constexpr uint32_t kMaxBlob = 1u << 20;

// A rank's claim: which rank of how many.
struct Hello {
  uint32_t magic, rank, ranks;
};

Hello decode_hello(std::span<const uint8_t> bytes) {
  uint32_t be[4];
  std::memcpy(be, bytes.data(), sizeof be);
  return {ntohl(be[0]), ntohl(be[1]), ntohl(be[2])};
}

// The proof binds the claim: a rank's handshake is worthless for another rank or job size.
std::string purpose(uint32_t rank, uint32_t ranks) {
  return "bootstrap/" + std::to_string(rank) + "/" + std::to_string(ranks);
}

Status send_u32(int fd, uint32_t v, net::Clock::time_point deadline) {
  uint32_t be = htonl(v);
  return net::send_all(fd, &be, 4, deadline);
}

Result<uint32_t> recv_u32(int fd, net::Clock::time_point deadline) {
  uint32_t be = 0;
  if (Status st = net::recv_all(fd, &be, 4, deadline); !st) return Error{st.message()};
  return ntohl(be);
}

}  // namespace

std::string JobId::encode() const { return "xccl1 " + root.str() + " " + net::to_hex(secret); }

Result<JobId> JobId::decode(const std::string& text) {
  std::istringstream in(text);
  std::string tag, where, hex;
  in >> tag >> where >> hex;
  if (tag != "xccl1") return Error{"not an xccl unique id"};
  Result<net::Endpoint> root = net::parse_endpoint(where);
  if (!root) return root.error();
  Result<net::Secret> secret = net::secret_from_hex(hex);
  if (!secret) return secret.error();
  return JobId{*root, *secret};
}

Result<std::unique_ptr<BootstrapRoot>> BootstrapRoot::start(const std::string& host, uint16_t port,
                                                            const net::Secret& secret,
                                                            std::chrono::milliseconds init_timeout) {
  uint16_t bound = 0;
  Result<net::Fd> fd = net::listen_on(host, port, &bound);
  if (!fd) return fd.error();
  return adopt(std::move(fd).value(), {host, bound}, secret, init_timeout);
}

Result<std::unique_ptr<BootstrapRoot>> BootstrapRoot::adopt(net::Fd listener, const net::Endpoint& at,
                                                            const net::Secret& secret,
                                                            std::chrono::milliseconds init_timeout) {
  std::unique_ptr<BootstrapRoot> root(new BootstrapRoot);
  root->listener_ = std::move(listener);
  root->endpoint_ = at;
  root->secret_ = secret;
  root->owner_pid_ = getpid();
  root->thread_ = std::make_unique<std::thread>([r = root.get(), init_timeout] { r->serve(init_timeout); });
  return root;
}

bool BootstrapRoot::hosted_here() const { return owner_pid_ == getpid(); }

BootstrapRoot::~BootstrapRoot() {
  if (!hosted_here()) {  // a forked copy: the thread is not ours to stop
    (void)thread_.release();
    return;
  }
  stop_ = true;
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    for (net::Fd& fd : clients_)
      if (fd) ::shutdown(fd.get(), SHUT_RDWR);
  }
  if (thread_ && thread_->joinable()) thread_->join();
}

// Join phase: each connection claims a rank (the hello) and proves it; the gate runs every
// handshake at once, so strangers cost legitimate ranks nothing. Returns the job's size, or
// -1 when the root stops or gives up; the gate and any stranger still handshaking go with it.
int BootstrapRoot::admit_ranks(net::Clock::time_point init_deadline) {
  int ranks = -1, joined = 0;
  net::Gate::Rules rules;
  rules.hello_bytes = 16;
  rules.max_pending = 256;  // every rank of a large job may connect at once
  rules.purpose = [&](size_t, std::span<const uint8_t> bytes) -> Result<std::string> {
    Hello h = decode_hello(bytes);
    if (h.magic != kHello) return Error{"peer does not speak the xccl bootstrap"};
    if (h.ranks == 0 || h.ranks > kMaxRanks || h.rank >= h.ranks || (ranks >= 0 && int(h.ranks) != ranks))
      return Error{"bad hello (rank " + std::to_string(h.rank) + " of " + std::to_string(h.ranks) + ")"};
    return purpose(h.rank, h.ranks);
  };
  rules.warn = [](size_t, const std::string& from, const std::string& why) {
    XCCL_LOG(LogLevel::kWarn, Subsys::kBoot, 0, "refused bootstrap connection from " + from + ": " + why);
  };
  net::Gate gate({listener_.get()}, secret_, rules);
  while (!stop_ && (ranks < 0 || joined < ranks)) {
    if (net::Clock::now() > init_deadline) {
      XCCL_LOG(LogLevel::kWarn, Subsys::kBoot, 0,
               "bootstrap root gave up: " + std::to_string(joined) + " of " + std::to_string(ranks) + " ranks joined");
      return -1;
    }
    Result<net::Gate::Arrival> got = gate.admit(std::min(init_deadline, net::Clock::now() + std::chrono::milliseconds(200)));
    refused_ = gate.refused();
    if (!got) continue;
    Hello claim = decode_hello(got->hello);
    uint32_t rank = claim.rank, n = claim.ranks;
    std::lock_guard<std::mutex> lock(clients_mu_);
    if (ranks >= 0 && int(n) != ranks) {  // proven, but for another size than the first rank's
      gate.refuse(0, got->from, "rank " + std::to_string(rank) + " claims " + std::to_string(n) + " ranks, not " +
                                    std::to_string(ranks));
      continue;
    }
    if (ranks < 0) ranks = int(n), clients_.resize(n);
    if (clients_[rank]) {
      gate.refuse(0, got->from, "rank " + std::to_string(rank) + " joined twice");
      continue;
    }
    clients_[rank] = std::move(got->fd);
    ++joined;
    XCCL_LOG(LogLevel::kTrace, Subsys::kBoot, 0, "rank " + std::to_string(rank) + " joined from " + got->from);
  }
  refused_ = gate.refused();
  return stop_ ? -1 : ranks;
}

void BootstrapRoot::serve(std::chrono::milliseconds init_timeout) {
  // However the job ends, its connections go with it (a process that makes many ids, a
  // launcher, keeps no descriptors of jobs that are over).
  struct CloseClients {
    BootstrapRoot* root;
    ~CloseClients() {
      std::lock_guard<std::mutex> lock(root->clients_mu_);
      root->clients_.clear();
    }
  } close_clients{this};
  int ranks = admit_ranks(net::Clock::now() + init_timeout);
  if (ranks < 0) return;
  listener_ = net::Fd();  // later connections are refused by the kernel
  // Rounds: every rank sends a blob; every rank receives all of them.
  const auto forever = net::Clock::now() + std::chrono::hours(24 * 365);
  while (!stop_) {
    std::vector<std::string> blobs(ranks);
    for (int r = 0; r < ranks; ++r) {
      Result<uint32_t> len = recv_u32(clients_[r].get(), forever);
      if (!len || *len > kMaxBlob) return;  // a rank left: the job is over
      blobs[r].resize(*len);
      if (!net::recv_all(clients_[r].get(), blobs[r].data(), *len, forever)) return;
    }
    std::string reply;
    for (const std::string& b : blobs) {
      uint32_t be = htonl(uint32_t(b.size()));
      reply.append(reinterpret_cast<const char*>(&be), 4);
      reply += b;
    }
    for (int r = 0; r < ranks; ++r)
      if (!net::send_all(clients_[r].get(), reply.data(), reply.size(), forever)) return;
  }
}

Result<BootstrapClient> BootstrapClient::join(const JobId& job, int rank, int ranks, net::Clock::time_point deadline) {
  // Claim a rank, then prove it.
  uint32_t hello[4] = {htonl(kHello), htonl(uint32_t(rank)), htonl(uint32_t(ranks)), 0};
  Result<net::Fd> fd = net::dial(job.root, {reinterpret_cast<const uint8_t*>(hello), sizeof hello}, job.secret,
                                 purpose(rank, ranks), deadline);
  if (!fd) return Error{"bootstrap: root at " + job.root.str() + " refused or failed the handshake: " + fd.error().message};
  BootstrapClient c;
  c.fd_ = std::move(fd).value();
  c.rank_ = rank;
  c.ranks_ = ranks;
  return c;
}

Result<std::vector<std::string>> BootstrapClient::allgather(const std::string& blob, net::Clock::time_point deadline) {
  if (blob.size() > kMaxBlob) return Error{"bootstrap: blob too large"};
  if (Status st = send_u32(fd_.get(), uint32_t(blob.size()), deadline); !st) return Error{"bootstrap: " + st.message()};
  if (Status st = net::send_all(fd_.get(), blob.data(), blob.size(), deadline); !st)
    return Error{"bootstrap: " + st.message()};
  std::vector<std::string> out(ranks_);
  for (int r = 0; r < ranks_; ++r) {
    Result<uint32_t> len = recv_u32(fd_.get(), deadline);
    if (!len) return Error{"bootstrap: waiting for the other ranks: " + len.error().message};
    if (*len > kMaxBlob) return Error{"bootstrap: malformed reply from the root"};
    out[r].resize(*len);
    if (Status st = net::recv_all(fd_.get(), out[r].data(), *len, deadline); !st)
      return Error{"bootstrap: " + st.message()};
  }
  return out;
}

std::string BootstrapClient::local_address() const {
  net::Endpoint me = net::local_endpoint(fd_.get());
  if (me.port == 0) me.host = "127.0.0.1";  // cannot be told: the loopback
  return me.host;
}

Status BootstrapClient::barrier(net::Clock::time_point deadline) {
  Result<std::vector<std::string>> r = allgather("", deadline);
  if (!r) return r.error();
  return Status::Ok();
}

}  // namespace xm::ccl
