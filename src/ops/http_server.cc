#include "ops/http_server.h"

#include <httplib.h>

namespace xm::ops {

Result<std::unique_ptr<HttpServer>> HttpServer::bind(const std::string& listen, std::vector<HttpRoute> routes,
                                                     size_t threads) {
  Result<SocketAddress> at = parse_socket_address(listen);
  if (!at) return Error{"--listen " + at.error().message};

  std::unique_ptr<HttpServer> s(new HttpServer);
  s->server_ = std::make_unique<httplib::Server>();
  s->server_->new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s->server_->set_keep_alive_timeout(2);
  for (HttpRoute& r : routes) {
    const std::string path = r.path;  // (before the route moves into its handler)
    const bool post = r.post;
    auto handler = [route = std::move(r)](const httplib::Request& req, httplib::Response& res) {
      std::map<std::string, std::string> params;
      for (const auto& [key, value] : req.params) params[key] = value;
      res.set_content(route.render(params), route.content_type);
    };
    if (post) s->server_->Post(path, std::move(handler));
    else s->server_->Get(path, std::move(handler));
  }
  const int port = at->port == 0 ? s->server_->bind_to_any_port(at->host)
                                 : (s->server_->bind_to_port(at->host, at->port) ? at->port : -1);
  if (port < 0) return Error{"cannot listen on " + listen + " (in use, or not an address of this host?)"};
  s->bound_ = SocketAddress{at->host, uint16_t(port)};
  return s;
}

void HttpServer::start() {
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

HttpServer::~HttpServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace xm::ops
