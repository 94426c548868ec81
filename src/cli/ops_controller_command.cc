// `xm ops controller`: the controller of a monitored testbed (ops/controller.h) as a
// process; `xm ops locate`: its open incidents, in words.
#include <httplib.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/ops_command.h"
#include "ops/controller.h"
#include "ops/http_server.h"
#include "ops/monitor.h"
#include "ops/plan_dir.h"
#include "testbed/daemons.h"
#include "testbed/state.h"
#include "testbed/system.h"
#include "util/format.h"

namespace xm::cli {
namespace {

std::atomic<bool> g_stop{false};

}  // namespace

void add_controller(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string name = "tb", listen = "127.0.0.1:9300", port_file;
    ops::ControllerOptions options;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = ops.add_subcommand(
      "controller", "locate faults from the agents' probes and counters (read from Prometheus) and the plan; serves "
                    "incidents as JSON (/api/incidents) and records them in the inventory");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_option("--listen", a->listen, "ADDRESS:PORT of the JSON API (port 0: any free one)")->capture_default_str();
  cmd->add_option("--port-file", a->port_file, "write the port it listens on here once it listens");
  cmd->add_option("--prometheus-port", a->options.prometheus_port,
                  "Prometheus on 127.0.0.1 (default: the one `xm ops monitor` started)");
  cmd->add_option("--window", a->options.window_s, "seconds of probe counts a decision looks at")->capture_default_str();
  cmd->add_option("--clear-after", a->options.clear_after_s, "seconds without evidence before an incident closes")
      ->capture_default_str();
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("controller", exit_code);
    if (!testbed::is_root()) return fail(testbed::root_required().message, 1);
    if (!(a->options.window_s >= 2) || !(a->options.clear_after_s > 0))
      return fail("--window must be at least 2 seconds, --clear-after > 0", 2);
    Result<testbed::Plan> tb = testbed::load_state(a->name);
    if (!tb) return fail(tb.error().message, 2);
    Result<ops::FabricPlan> plan = ops::load_plan_dir(testbed::plan_dir(a->name));
    if (!plan) return fail(plan.error().message, 2);
    if (a->options.prometheus_port == 0) a->options.prometheus_port = ops::read_port_file(ops::monitor_dir(a->name) + "/prometheus.port");
    if (a->options.prometheus_port == 0) return fail("no Prometheus: start `xm ops monitor --name " + a->name + "` first", 2);
    a->options.database = testbed::plan_dir(a->name) + "/inventory.sqlite";
    Result<std::unique_ptr<ops::Controller>> c = ops::Controller::open(*tb, std::move(plan).value(), a->options);
    if (!c) return fail(c.error().message, 1);
    ops::Controller& controller = **c;
    Result<std::unique_ptr<ops::HttpServer>> server = ops::HttpServer::bind(
        a->listen, {{"/api/incidents", "application/json",
                     [&controller](const auto& p) { return controller.incidents_json(p.count("all") > 0); }},
                    {"/api/status", "application/json", [&controller](const auto&) { return controller.status_json(); }}});
    if (!server) return fail(server.error().message, 2);
    (*server)->start();
    if (!announce_daemon(g_stop, a->port_file, (*server)->port())) return fail("cannot write " + a->port_file, 1);
    std::cerr << "xm ops controller: testbed " << a->name << ", Prometheus 127.0.0.1:" << a->options.prometheus_port
              << "; incidents on http://" << (*server)->address().str() << "/api/incidents\n";
    controller.run(g_stop);
    server->reset();
  });
}

void add_locate(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string name = "tb";
    int port = 0;
    bool json = false, all = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = ops.add_subcommand(
      "locate", "the controller's open incidents: which component, what fault, the evidence (exit 1 when any is open)");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_option("--port", a->port, "the controller's port on 127.0.0.1 (default: the one `xm ops monitor` started)");
  cmd->add_flag("--json", a->json, "the controller's JSON as it is");
  cmd->add_flag("--all", a->all, "closed incidents too");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("locate", exit_code);
    const int port = a->port ? a->port : ops::read_port_file(ops::monitor_dir(a->name) + "/controller.port");
    if (port == 0) return fail("no controller for testbed " + a->name + ": start `xm ops monitor --name " + a->name + "`", 2);
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(2);
    client.set_read_timeout(5);
    auto r = client.Get(a->all ? "/api/incidents?all=1" : "/api/incidents");
    if (!r || r->status != 200)
      return fail("the controller on 127.0.0.1:" + std::to_string(port) + " does not answer" +
                      (r ? " (HTTP " + std::to_string(r->status) + ")" : " (" + httplib::to_string(r.error()) + ")"),
                  2);
    nlohmann::json j = nlohmann::json::parse(r->body, nullptr, false);
    if (j.is_discarded() || !j.contains("incidents")) return fail("the controller answered something other than incidents", 2);
    size_t open = 0;
    for (const auto& i : j["incidents"]) open += i["closed_at"].is_null() ? 1 : 0;
    if (a->json) {
      std::cout << r->body;
    } else if (j["incidents"].empty()) {
      std::cout << "no incidents on testbed " << a->name << "\n";
    } else {
      for (const auto& i : j["incidents"]) {
        const bool is_open = i["closed_at"].is_null();
        std::cout << (is_open ? "OPEN   " : "closed ") << i["component"].get<std::string>() << "  "
                  << i["fault"].get<std::string>() << (i["network"].get<bool>() ? "" : " (host, not the network)") << "  for "
                  << trimmed(i["seconds"].get<double>(), 3) << " s\n       " << i["evidence"].get<std::string>() << "\n";
      }
    }
    exit_code = open > 0 ? 1 : 0;
  });
}

}  // namespace xm::cli
