#include "ops/metrics_server.h"

#include <httplib.h>

#include "ops/exposition.h"

namespace xm::ops {

Result<std::unique_ptr<MetricsServer>> MetricsServer::bind(const std::string& listen,
                                                           std::function<std::string()> render) {
  size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return Error{"--listen \"" + listen + "\" is not ADDRESS:PORT"};
  const std::string address = listen.substr(0, colon), port_text = listen.substr(colon + 1);
  int port = -1;
  try {
    size_t used = 0;
    port = std::stoi(port_text, &used);
    if (used != port_text.size()) port = -1;
  } catch (const std::exception&) {
  }
  if (port < 0 || port > 65535) return Error{"--listen \"" + listen + "\": the port must be 0-65535"};

  std::unique_ptr<MetricsServer> s(new MetricsServer);
  s->server_ = std::make_unique<httplib::Server>();
  // Prometheus scrapes one connection at a time: two threads serve a scrape and a person.
  s->server_->new_task_queue = [] { return new httplib::ThreadPool(2); };
  s->server_->Get("/metrics", [render = std::move(render)](const httplib::Request&, httplib::Response& res) {
    res.set_content(render(), kExpositionContentType);
  });
  s->port_ = port == 0 ? s->server_->bind_to_any_port(address) : (s->server_->bind_to_port(address, port) ? port : -1);
  if (s->port_ < 0) return Error{"cannot listen on " + listen + " (in use, or not an address of this host?)"};
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
