// `xm ops controller`: the controller of a monitored testbed (ops/controller.h) as a
// process; `xm ops locate`: its open incidents, in words.
#include <httplib.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>

#include "cli/ops_command.h"
#include "ops/controller.h"
#include "ops/dashboard.h"
#include "ops/http_server.h"
#include "ops/monitor.h"
#include "ops/plan_dir.h"
#include "testbed/daemons.h"
#include "testbed/state.h"
#include "testbed/system.h"
#include "util/clock.h"
#include "util/format.h"

namespace xm::cli {
namespace {

std::atomic<bool> g_stop{false};

}  // namespace

Result<std::string> ask_controller(const std::string& name, int port, bool post, const std::string& path) {
  if (port == 0) port = ops::read_port_file(ops::monitor_dir(name) + "/controller.port");
  if (port == 0) return Error{"no controller for testbed " + name + ": start `xm ops monitor --name " + name + "`"};
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(10);
  auto r = post ? client.Post(path) : client.Get(path);
  if (!r || r->status != 200)
    return Error{"the controller on 127.0.0.1:" + std::to_string(port) + " does not answer" +
                 (r ? " (HTTP " + std::to_string(r->status) + ")" : " (" + httplib::to_string(r.error()) + ")")};
  return r->body;
}

std::string describe_incident(const nlohmann::json& i) {
  std::string out = (i["closed_at"].is_null() ? "OPEN   " : "closed ") + i["component"].get<std::string>() + "  " +
                    i["fault"].get<std::string>() + (i["network"].get<bool>() ? "" : " (host, not the network)") + "  for " +
                    trimmed(i["seconds"].get<double>(), 3) + " s\n       " + i["evidence"].get<std::string>() + "\n";
  if (!i.value("heal", "").empty())
    out += "       healing, " + trimmed(i["healed_at"].get<double>() - i["opened_at"].get<double>(), 2) +
           " s after it was located: " + i["heal"].get<std::string>() + "\n";
  return out;
}

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
  cmd->add_option("--tick", a->options.tick_s, "seconds between evaluations (`xm ops monitor`: its scrape interval)")
      ->capture_default_str();
  cmd->add_option("--window", a->options.window_s, "seconds of probe counts a decision looks at")->capture_default_str();
  cmd->add_option("--clear-after", a->options.clear_after_s, "seconds without evidence before an incident closes")
      ->capture_default_str();
  cmd->add_option("--restore-after", a->options.restore_after_s,
                  "seconds a drained component's incident stays closed before it is restored (doubling per recurrence "
                  "within the hour)")
      ->capture_default_str();
  cmd->add_option("--stale-after", a->options.stale_after_s,
                  "seconds without a complete evaluation before its incidents are called stale (`xm ops locate` exits 2)")
      ->capture_default_str();
  cmd->add_flag("!--no-heal", a->options.heal, "locate only: drain nothing, advise no rail");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("controller", exit_code);
    if (!testbed::is_root()) return fail(testbed::root_required().message, 1);
    if (!(a->options.tick_s >= 0.1) || !(a->options.window_s >= 2) || !(a->options.clear_after_s > 0) ||
        !(a->options.restore_after_s >= 0) || !(a->options.stale_after_s > a->options.tick_s))
      return fail("--tick must be at least 0.1 seconds, --window at least 2, --clear-after > 0, --restore-after >= 0, "
                  "--stale-after > --tick",
                  2);
    Result<testbed::Plan> tb = testbed::load_state(a->name);
    if (!tb) return fail(tb.error().message, 2);
    Result<ops::FabricPlan> plan = ops::load_plan_dir(testbed::plan_dir(a->name));
    if (!plan) return fail(plan.error().message, 2);
    if (a->options.prometheus_port == 0) a->options.prometheus_port = ops::read_port_file(ops::monitor_dir(a->name) + "/prometheus.port");
    if (a->options.prometheus_port == 0) return fail("no Prometheus: start `xm ops monitor --name " + a->name + "` first", 2);
    a->options.database = testbed::plan_dir(a->name) + "/inventory.sqlite";
    a->options.rail_advice = testbed::rail_advice_path(a->name);
    Result<std::unique_ptr<ops::Controller>> c = ops::Controller::open(*tb, std::move(plan).value(), a->options);
    if (!c) return fail(c.error().message, 1);
    ops::Controller& controller = **c;
    // The dashboard's plots read Prometheus on the server's threads, apart from the evaluations.
    ops::PrometheusClient series_client("127.0.0.1", a->options.prometheus_port, 5);
    std::mutex series_mu;
    auto rails = [&](const auto& p) -> std::string {
      const double seconds = p.count("seconds") ? std::atof(p.at("seconds").c_str()) : 300;
      std::lock_guard<std::mutex> lock(series_mu);
      Result<std::string> r = ops::rails_json(controller.plan(), series_client, unix_seconds(), seconds > 0 ? seconds : 300);
      return r ? *r : nlohmann::json{{"error", r.error().message}}.dump() + "\n";
    };
    Result<std::unique_ptr<ops::HttpServer>> server = ops::HttpServer::bind(
        a->listen, {{"/", "text/html; charset=utf-8", [](const auto&) { return ops::dashboard_page(); }},
                    {"/api/fabric", "application/json",
                     [&controller](const auto&) { return ops::fabric_json(controller.plan(), controller.health()); }},
                    {"/api/rails", "application/json", rails},
                    {"/api/incidents", "application/json",
                     [&controller](const auto& p) { return controller.incidents_json(p.count("all") > 0); }},
                    {"/api/actions", "application/json", [&controller](const auto&) { return controller.actions_json(); }},
                    {"/api/undrain", "application/json",
                     [&controller](const auto& p) { return controller.undrain(p.count("component") ? p.at("component") : ""); },
                     true},
                    {"/api/status", "application/json", [&controller](const auto&) { return controller.status_json(); }},
                    {"/api/probes", "application/json", [&controller](const auto&) { return controller.probes_json(); }}},
        8);  // a browser opens several connections at once; Prometheus scrapes agents, not this
    if (!server) return fail(server.error().message, 2);
    (*server)->start();
    if (!announce_daemon(g_stop, a->port_file, (*server)->port())) return fail("cannot write " + a->port_file, 1);
    std::cerr << "xm ops controller: testbed " << a->name << ", Prometheus 127.0.0.1:" << a->options.prometheus_port
              << "; dashboard on http://" << (*server)->address().str() << "/\n";
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
      "locate", "the controller's open incidents: which component, what fault, the evidence (exit 1 when any is open, 2 "
                "when the controller has stopped evaluating and they are stale)");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_option("--port", a->port, "the controller's port on 127.0.0.1 (default: the one `xm ops monitor` started)");
  cmd->add_flag("--json", a->json, "the controller's JSON as it is");
  cmd->add_flag("--all", a->all, "closed incidents too");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("locate", exit_code);
    Result<std::string> body = ask_controller(a->name, a->port, false, a->all ? "/api/incidents?all=1" : "/api/incidents");
    if (!body) return fail(body.error().message, 2);
    nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
    if (j.is_discarded() || !j.contains("incidents")) return fail("the controller answered something other than incidents", 2);
    size_t open = 0;
    for (const auto& i : j["incidents"]) open += i["closed_at"].is_null() ? 1 : 0;
    if (a->json) {
      std::cout << *body;
    } else if (j["incidents"].empty()) {
      std::cout << "no incidents on testbed " << a->name << "\n";
    } else {
      for (const auto& i : j["incidents"]) std::cout << describe_incident(i);
    }
    exit_code = open > 0 ? 1 : 0;
    // Stale incidents are no answer: an empty list would read as a healthy fabric.
    if (const std::string stale = j.value("stale", ""); !stale.empty())
      fail("the controller's incidents are stale, not the fabric's state now: " + stale, 2);
  });
}

}  // namespace xm::cli

namespace xm::cli {

void add_undrain(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string name = "tb", component;
    int port = 0;
    bool all = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = ops.add_subcommand(
      "undrain", "undo the controller's healing now: reopen a drained cable's BGP sessions, withdraw a rail's advice");
  cmd->add_option("component", a->component, "a drained cable (\"tor0:spine1 - spine1:tor0\"), an incident's component, or a NIC (\"h3/nic1\")");
  cmd->add_flag("--all", a->all, "everything the controller has drained");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_option("--port", a->port, "the controller's port on 127.0.0.1 (default: the one `xm ops monitor` started)");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("undrain", exit_code);
    if (a->all == !a->component.empty()) return fail("name one component, or --all", 2);
    Result<std::string> body =
        ask_controller(a->name, a->port, true, a->all ? "/api/undrain" : "/api/undrain?component=" + httplib::detail::encode_query_param(a->component));
    if (!body) return fail(body.error().message, 2);
    nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
    if (j.is_discarded() || !j.contains("restored")) return fail("the controller answered something other than an undrain", 2);
    if (j["restored"].empty()) return fail(a->all ? "nothing is drained" : "nothing drained matches " + a->component, 1);
    for (const auto& c : j["restored"]) std::cout << "restored " << c.get<std::string>() << "\n";
    exit_code = 0;
  });
}

}  // namespace xm::cli
