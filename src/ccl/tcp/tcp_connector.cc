#include "ccl/tcp/tcp_connector.h"

#include <arpa/inet.h>
#include <poll.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "ccl/log.h"

namespace xm::ccl {
namespace {

// A data connection's claim: the dialling rank and the rail.
std::pair<int, size_t> decode_hello(std::span<const uint8_t> bytes) {
  uint32_t be[2];
  std::memcpy(be, bytes.data(), sizeof be);
  return {int(ntohl(be[0])), ntohl(be[1])};
}

std::string purpose(int a, int b, size_t rail) {
  return "data/" + std::to_string(std::min(a, b)) + "/" + std::to_string(std::max(a, b)) + "/" + std::to_string(rail);
}

}  // namespace

TcpConnector::TcpConnector(TcpSetup setup) : setup_(std::move(setup)) {
  if (setup_.listeners) listeners_ = std::move(*setup_.listeners);
  setup_.listeners = nullptr;
  // The hello claims a rank and rail; the handshake then proves the claim.
  net::Gate::Rules rules;
  rules.hello_bytes = 8;
  rules.purpose = [this](size_t listener, std::span<const uint8_t> bytes) -> Result<std::string> {
    auto [peer, rail] = decode_hello(bytes);
    bool reconnecting = links_.count(peer) && links_.at(peer)->rails() > 1;  // a failed rail, dialled again
    bool expected = peer > setup_.rank && knows(peer) && rail == listener && rail < rails_with(peer) &&
                    (reconnecting || (!links_.count(peer) && !(pending_.count(peer) && pending_.at(peer).sockets[rail])));
    if (!expected) return Error{"unexpected hello (rank " + std::to_string(peer) + ", rail " + std::to_string(rail) + ")"};
    return purpose(setup_.rank, peer, rail);
  };
  rules.warn = [rank = setup_.rank](size_t rail, const std::string& from, const std::string& why) {
    XCCL_LOG(LogLevel::kWarn, Subsys::kNet, rank,
             "refused data connection from " + from + " on rail " + std::to_string(rail) + ": " + why);
  };
  std::vector<int> listening;
  for (const net::Fd& l : listeners_) listening.push_back(l.get());
  gate_ = std::make_unique<net::Gate>(listening, setup_.secret, rules);
}

size_t TcpConnector::rails_with(int peer) const { return std::min(setup_.rails.size(), setup_.peers.at(peer).size()); }

TcpConnector::Pending& TcpConnector::pending(int peer) {
  auto [it, fresh] = pending_.try_emplace(peer);
  if (fresh) {
    it->second.sockets.resize(rails_with(peer));
    if (peer < setup_.rank) it->second.dialing.resize(rails_with(peer));
  }
  return it->second;
}

void TcpConnector::admit_arrivals() {
  if (!gate_) return;
  while (true) {
    Result<net::Gate::Arrival> in = gate_->admit(net::Clock::now());  // whoever is ready, no waiting
    if (!in) return;
    auto [peer, rail] = decode_hello(in->hello);
    if (auto link = links_.find(peer); link != links_.end()) {
      link->second->install(rail, std::move(in->fd));
      redials_.erase({peer, rail});
      continue;
    }
    Pending& p = pending(peer);
    if (p.sockets[rail]) {  // two proven connections for one rail: both passed the gate at once
      gate_->refuse(in->listener, in->from, "rail " + std::to_string(in->listener) + " connected twice");
      continue;
    }
    p.connected_rail(rail, std::move(in->fd));
  }
}

// Says who we claim to be, then proves it: the proof binds both ranks and the rail.
net::Dialer TcpConnector::dialer(int peer, size_t rail) const {
  const Rail& theirs = setup_.peers.at(peer)[rail];
  uint32_t hello[2] = {htonl(uint32_t(setup_.rank)), htonl(uint32_t(rail))};
  return net::Dialer(net::Endpoint{theirs.host, theirs.port},
                     std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(hello), sizeof hello), setup_.secret,
                     purpose(setup_.rank, peer, rail), setup_.rails[rail].host);
}

void TcpConnector::step_dials(int peer) {
  Pending& p = pending(peer);
  for (size_t r = 0; r < p.dialing.size() && p.failed.ok(); ++r) {  // the higher rank dials
    if (p.sockets[r]) continue;
    if (!p.dialing[r]) p.dialing[r].emplace(dialer(peer, r));
    net::Dialer::State s = p.dialing[r]->step();
    if (s == net::Dialer::State::kFailed) p.failed = Error{"rail " + std::to_string(r) + ": " + p.dialing[r]->error()};
    if (s == net::Dialer::State::kDone) p.connected_rail(r, p.dialing[r]->take());
  }
}

TcpLink* TcpConnector::make_link(int peer) {
  Pending& p = pending(peer);
  // Every rail, or the ones that came while another rail to the same peer stayed silent for
  // as long as makes a connected rail dead (a rail cut before the job, or before its first
  // message to this peer): the others are reconnected in the background like rails that failed.
  bool some_for_a_while = p.connected > 0 && p.sockets.size() > 1 && net::Clock::now() - p.first_rail > setup_.policy.stall;
  if (!p.failed.ok() || (p.connected < p.sockets.size() && !some_for_a_while)) return nullptr;
  for (size_t r = 0; r < p.dialing.size(); ++r)  // a dial under way goes on as a reconnection
    if (!p.sockets[r] && p.dialing[r]) redials_.emplace(std::make_pair(peer, r), Redial{std::move(*p.dialing[r]), net::Clock::now()});
  const std::vector<Rail>& theirs = setup_.peers.at(peer);
  std::vector<double> weights;
  std::vector<bool> spares;
  for (size_t r = 0; r < p.sockets.size(); ++r) {
    weights.push_back(std::min(setup_.rails[r].gbps, theirs[r].gbps));
    spares.push_back(setup_.rails[r].spare || theirs[r].spare);
  }
  auto link = std::make_unique<TcpLink>(setup_.rank, peer, std::move(p.sockets), weights, spares, setup_.stripe_bytes,
                                        setup_.window_bytes, setup_.policy);
  if (!setup_.rail_advice.empty()) {
    if (!advice_) advice_ = std::make_shared<RailAdviceFile>(setup_.rail_advice);
    std::vector<std::string> local, remote;
    for (size_t r = 0; r < weights.size(); ++r) local.push_back(setup_.rails[r].host), remote.push_back(theirs[r].host);
    link->heed(advice_, std::move(local), std::move(remote));
  }
  pending_.erase(peer);
  XCCL_LOG(LogLevel::kTrace, Subsys::kNet, setup_.rank,
           "connected to rank " + std::to_string(peer) + " over " + std::to_string(weights.size()) + " rail(s)");
  TcpLink* made;
  {
    std::lock_guard<std::mutex> lock(links_mu_);
    made = (links_[peer] = std::move(link)).get();
  }
  // Nobody left to admit, and no rail to reconnect (one rail: its failure is the link's):
  // the kernel refuses from now on.
  if (links_.size() == setup_.peers.size() && setup_.rails.size() < 2) {
    gate_.reset();
    listeners_.clear();
  }
  return made;
}

TcpLink* TcpConnector::progress(int peer) {
  if (auto it = links_.find(peer); it != links_.end()) return it->second.get();
  if (!knows(peer)) return nullptr;
  step_dials(peer);
  admit_arrivals();  // the lower rank's side, and any other peer's that is under way
  return make_link(peer);
}

bool TcpConnector::needs_tending() const {
  for (auto& [peer, link] : links_)
    if (link->busy()) return true;
  return false;
}

void TcpConnector::finish_all(net::Clock::time_point deadline) {
  for (auto& [peer, link] : links_) link->finish();
  for (;;) {
    bool done = true;
    for (auto& [peer, link] : links_) done &= link->finished();
    if (done || net::Clock::now() >= deadline) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void TcpConnector::tend() {
  admit_arrivals();
  auto now = net::Clock::now();
  for (auto& [peer, link] : links_) {
    if (!link->busy()) continue;
    link->progress();
    for (size_t r = 0; r < link->rails(); ++r) {
      if (link->wants_connection(r, now)) link->connecting(r);
      if (link->state(r) != RailState::kProbing || peer > setup_.rank || link->closed_by_peer()) continue;
      redial(peer, r, now);  // the higher rank dials
    }
  }
}

void TcpConnector::redial(int peer, size_t rail, net::Clock::time_point now) {
  auto key = std::make_pair(peer, rail);
  auto it = redials_.find(key);
  // A dial whose SYN went into a cut path waits on the kernel's backoff; start afresh.
  if (it != redials_.end() && now - it->second.started > std::chrono::milliseconds(1500)) redials_.erase(it), it = redials_.end();
  if (it == redials_.end()) it = redials_.emplace(key, Redial{dialer(peer, rail), now}).first;
  net::Dialer::State s = it->second.dialer.step();
  if (s == net::Dialer::State::kDone) {
    links_.at(peer)->install(rail, it->second.dialer.take());
    redials_.erase(it);
  } else if (s == net::Dialer::State::kFailed) {  // refused for good (a wrong secret): the rail stays down
    XCCL_LOG(LogLevel::kWarn, Subsys::kNet, setup_.rank,
             "rail " + std::to_string(rail) + " to rank " + std::to_string(peer) + ": " + it->second.dialer.error());
    redials_.erase(it);
  }
}

const TcpLink* TcpConnector::find(int peer) const {
  std::lock_guard<std::mutex> lock(links_mu_);
  auto it = links_.find(peer);
  return it == links_.end() ? nullptr : it->second.get();
}

Status TcpConnector::status(int peer) const {
  auto it = pending_.find(peer);
  if (it == pending_.end() || it->second.failed.ok()) return Status::Ok();
  return it->second.failed;
}

Status TcpConnector::connect_all(net::Clock::time_point deadline) {
  std::vector<pollfd> fds;
  while (true) {
    for (auto& [peer, rails] : setup_.peers)
      if (!links_.count(peer)) step_dials(peer);
    admit_arrivals();
    size_t missing = 0;
    bool pausing = false;  // a dial waits out its pause before trying again
    fds.clear();
    if (gate_) gate_->poll_fds(fds);
    for (auto& [peer, rails] : setup_.peers) {
      if (links_.count(peer) || make_link(peer)) continue;
      if (Status st = status(peer); !st) return Error{"rank " + std::to_string(peer) + " " + st.message()};
      ++missing;
      for (auto& d : pending(peer).dialing) {
        if (!d) continue;
        if (pollfd w = d->waits_for(); w.fd >= 0) fds.push_back(w);
        else pausing = true;
      }
    }
    if (missing == 0) return Status::Ok();
    if (net::Clock::now() >= deadline) {
      std::string why;
      for (auto& [peer, p] : pending_)
        for (auto& d : p.dialing)
          if (d && !d->error().empty()) why = ": " + d->error();
      return Error{"timed out with " + std::to_string(missing) + " TCP peer(s) not connected" + why};
    }
    ::poll(fds.data(), fds.size(), pausing ? 5 : 100);  // until a dial or the gate can move
  }
}

Result<std::map<int, std::unique_ptr<TcpLink>>> connect_tcp(const TcpSetup& setup) {
  TcpConnector connector(setup);
  if (Status st = connector.connect_all(setup.deadline); !st) return Error{st.message()};
  return connector.take_links();
}

}  // namespace xm::ccl
