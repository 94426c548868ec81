// TCP connections on demand. A rank connects to a peer only when a step first needs it
// (LazyTcpLink stands in until then), so a job of thousands of ranks holds sockets and
// windows only for the peers its algorithms talk to. Of each pair, the higher rank
// dials, one connection per rail, rail-affine; the lower admits through a gate on its rail
// listeners, which stay open until every peer is connected (for good with two rails or
// more, to take a failed rail back). Both sides move in non-blocking
// steps from the executor's progress calls: a rank connecting to one peer keeps moving
// bytes with the others, and strangers on a listener delay nobody.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "ccl/net/gate.h"
#include "ccl/tcp/tcp_transport.h"

namespace xm::ccl {

class TcpConnector {
 public:
  // Takes over setup.listeners (the sockets themselves), closed once every peer is connected.
  explicit TcpConnector(TcpSetup setup);
  TcpConnector(const TcpConnector&) = delete;
  TcpConnector& operator=(const TcpConnector&) = delete;

  // Moves the connection to `peer` on without blocking (and admits whoever waits at the
  // gate); the link once every rail is connected, else null.
  TcpLink* progress(int peer);
  // An Error once connecting to `peer` failed for good (a wrong secret).
  Status status(int peer) const;
  // Connects to every peer now (what init did before connections were made on demand).
  Status connect_all(net::Clock::time_point deadline);
  // The links' own work while no step needs them (resending, acknowledging) and failed
  // rails' reconnection: call while needs_tending(), from the thread that runs the links.
  bool needs_tending() const;
  void tend();
  // At the end: every link sends end of stream and waits (until `deadline`) for its peer
  // to acknowledge what it sent (TcpLink::finish).
  void finish_all(net::Clock::time_point deadline);
  // The link to `peer` once connected (null before), from any thread.
  const TcpLink* find(int peer) const;
  // The connected links, by peer.
  const std::map<int, std::unique_ptr<TcpLink>>& links() const { return links_; }
  std::map<int, std::unique_ptr<TcpLink>> take_links() { return std::move(links_); }
  bool knows(int peer) const { return setup_.peers.count(peer) > 0; }

 private:
  struct Pending {
    std::vector<std::optional<net::Dialer>> dialing;  // per rail, when this rank dials
    std::vector<net::Fd> sockets;                     // per rail, once proven
    size_t connected = 0;
    net::Clock::time_point first_rail{};
    Status failed;
    void connected_rail(size_t rail, net::Fd fd) {
      sockets[rail] = std::move(fd);
      if (connected++ == 0) first_rail = net::Clock::now();
    }
  };
  Pending& pending(int peer);
  size_t rails_with(int peer) const;
  net::Dialer dialer(int peer, size_t rail) const;  // this rank's connection to `peer` on `rail`
  void step_dials(int peer);  // when this rank dials `peer`
  void admit_arrivals();      // everyone at the gate, into their peers' slots
  TcpLink* make_link(int peer);  // once every rail of `peer` is in
  void redial(int peer, size_t rail, net::Clock::time_point now);
  struct Redial {
    net::Dialer dialer;
    net::Clock::time_point started;
  };

  TcpSetup setup_;
  std::vector<net::Fd> listeners_;
  std::unique_ptr<net::Gate> gate_;  // on listeners_; both go once every peer is connected
  std::map<int, Pending> pending_;
  std::map<int, std::unique_ptr<TcpLink>> links_;  // changed under links_mu_, read without it on this thread
  mutable std::mutex links_mu_;
  std::map<std::pair<int, size_t>, Redial> redials_;
  std::shared_ptr<RailAdviceFile> advice_;  // one reader for every link (they run on one thread)
};

// A TcpLink that is made when first needed: until then it carries nothing and says so by
// moving no bytes; its progress() drives the connection.
class LazyTcpLink final : public Link {
 public:
  LazyTcpLink(TcpConnector& connector, int peer) : connector_(connector), peer_(peer) {}
  size_t send_some(const std::byte* data, size_t bytes) override { return link() ? link_->send_some(data, bytes) : 0; }
  std::span<const std::byte> readable() override { return link_ ? link_->readable() : std::span<const std::byte>(); }
  void consume(size_t bytes) override {
    if (link_) link_->consume(bytes);
  }
  void progress() override {
    if (link()) link_->progress();
  }
  Status status() const override { return link_ ? link_->status() : connector_.status(peer_); }
  bool busy() const override { return link_ && link_->busy(); }
  bool unsent() const override { return link_ && link_->unsent(); }
  void close() override {
    if (link_) link_->close();
  }

 private:
  TcpLink* link() { return link_ ? link_ : (link_ = connector_.progress(peer_)); }
  TcpConnector& connector_;
  int peer_;
  TcpLink* link_ = nullptr;
};

// Connects to every peer in `setup` at once and closes the listeners: every connection
// authenticated and rail-affine, strangers refused and logged.
Result<std::map<int, std::unique_ptr<TcpLink>>> connect_tcp(const TcpSetup& setup);

}  // namespace xm::ccl
