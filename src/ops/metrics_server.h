// The HTTP endpoint an agent serves: GET /metrics answers with what `render` returns, in
// Prometheus's exposition format; anything else 404. The listening socket is bound in
// the calling thread's network namespace when `bind` returns, so an agent can listen on
// the management network and probe from the host's fabric namespace.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "util/result.h"
#include "util/socket_address.h"

namespace httplib {
class Server;
}

namespace xm::ops {

class MetricsServer {
 public:
  // `listen`: "ADDRESS:PORT"; port 0 picks a free one (port() says which).
  static Result<std::unique_ptr<MetricsServer>> bind(const std::string& listen, std::function<std::string()> render);
  ~MetricsServer();  // stops serving

  int port() const { return bound_.port; }
  const SocketAddress& address() const { return bound_; }  // with the port it got
  // Serves on a thread of its own until destroyed.
  void start();

 private:
  MetricsServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  SocketAddress bound_;
};

}  // namespace xm::ops
