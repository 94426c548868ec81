// TCP across hosts, multi-rail: one socket per rail to each peer, rail r to the peer's
// rail r; one stream striped across all rails in proportion to their speed (stripe k
// goes to StripePlan's k-th rail at both ends). Non-blocking sockets, driven by the
// executor's progress loop: no thread per connection.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "ccl/link.h"
#include "ccl/net/auth.h"
#include "ccl/net/socket.h"
#include "ccl/tcp/rails.h"

namespace xm::ccl {

class TcpLink final : public Link {
 public:
  TcpLink(int peer, std::vector<net::Fd> sockets, std::vector<double> weights, size_t stripe_bytes,
          size_t staging_bytes);
  size_t send_some(const std::byte* data, size_t bytes) override;
  std::span<const std::byte> readable() override { return staging_.readable(); }
  void consume(size_t bytes) override { staging_.consume(bytes); }
  void progress() override;
  Status status() const override;
  void close() override;

  size_t rails() const { return sockets_.size(); }
  uint64_t bytes_sent(size_t rail) const { return sent_[rail]; }
  uint64_t bytes_received(size_t rail) const { return received_[rail]; }

 private:
  void fail(const std::string& what);

  int peer_;
  std::vector<net::Fd> sockets_;
  size_t stripe_;
  StripePlan send_plan_, recv_plan_;
  size_t send_rail_ = 0, send_left_ = 0, recv_rail_ = 0, recv_left_ = 0;
  std::unique_ptr<std::byte[]> staging_memory_;
  ByteFifo staging_;  // received bytes not yet consumed
  std::vector<uint64_t> sent_, received_;
  Status status_;
  bool peer_closed_ = false;  // end of stream: fine until we need more bytes from it
};

struct TcpSetup {
  int rank = 0;
  std::vector<Rail> rails;                      // this rank's, with listening ports
  std::vector<net::Fd>* listeners = nullptr;    // one per rail, taken by the connector
  std::map<int, std::vector<Rail>> peers;       // peers to reach over TCP, and their rails
  net::Secret secret;
  net::Clock::time_point deadline;
  size_t stripe_bytes = 256 << 10;
  size_t staging_bytes = 4 << 20;
};

// Listens on every rail (any free port); fills in the ports.
Result<std::vector<net::Fd>> listen_on_rails(std::vector<Rail>& rails);

}  // namespace xm::ccl
