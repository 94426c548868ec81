#include "ops/metrics_server.h"

#include <httplib.h>

#include "ops/exposition.h"

namespace xm::ops {

Result<std::unique_ptr<MetricsServer>> MetricsServer::bind(const std::string& listen,
                                                           std::function<std::string()> render) {
  Result<SocketAddress> at = parse_socket_address(listen);
  if (!at) return Error{"--listen " + at.error().message};

  std::unique_ptr<MetricsServer> s(new MetricsServer);
  s->server_ = std::make_unique<httplib::Server>();
  // Prometheus scrapes one connection at a time: two threads serve a scrape and a person.
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  s->server_->Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), kExpositionContentType);
  });
  const int port = at->port == 0 ? s->server_->bind_to_any_port(at->host)
                                 : (s->server_->bind_to_port(at->host, at->port) ? at->port : -1);
  if (port < 0) return Error{"cannot listen on " + listen + " (in use, or not an address of this host?)"};
  s->bound_ = SocketAddress{at->host, uint16_t(port)};
  return s;
}

void MetricsServer::start() {
  thread_ = std::thread([this] { server_->listen_after_bind(); });
}

MetricsServer::~MetricsServer() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace xm::ops
