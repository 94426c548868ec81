// The HTTP endpoint the agent (GET /metrics, Prometheus's exposition format) and the
// controller (its JSON API, the dashboard) serve: each route a path, a content type and
// the function that renders it; anything else 404. The listening socket is bound in the
// calling thread's network namespace when `bind` returns, so an agent can listen on the
// management network and probe from the host's fabric namespace.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "util/result.h"
#include "util/socket_address.h"

namespace httplib {
class Server;
}

namespace xm::ops {

struct HttpRoute {
  std::string path;  // "/metrics"
  std::string content_type;
  // The body, from the query parameters; renders run on the server's threads.
  std::function<std::string(const std::map<std::string, std::string>& params)> render;
  bool post = false;  // an action (POST), not a page (GET)
};

class HttpServer {
 public:
  // `listen`: "ADDRESS:PORT"; port 0 picks a free one (port() says which). `threads`
  // serve at once; an idle keep-alive connection holds one for at most 2 s, so a browser's
  // handful of them, or a stray client, delays the others that long at worst.
  static Result<std::unique_ptr<HttpServer>> bind(const std::string& listen, std::vector<HttpRoute> routes,
                                                  size_t threads = 2);
  ~HttpServer();  // stops serving

  int port() const { return bound_.port; }
  const SocketAddress& address() const { return bound_; }  // with the port it got
  // Serves on a thread of its own until destroyed.
  void start();

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  SocketAddress bound_;
};

}  // namespace xm::ops
