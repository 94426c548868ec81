// `xm ops agent`: the host agent (ops/agent.h) as a process; `xm ops monitor`: one on
// every testbed host, and Prometheus scraping them (ops/monitor.h).
#include <signal.h>

#include <atomic>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include "cli/ops_command.h"
#include "ops/agent.h"
#include "ops/exposition.h"
#include "ops/http_server.h"
#include "ops/monitor.h"
#include "ops/plan_dir.h"
#include "testbed/state.h"
#include "testbed/system.h"

namespace xm::cli {
namespace {

std::atomic<bool> g_stop{false};
std::atomic<bool>* g_stop_on_signal = nullptr;
void on_signal(int) { g_stop_on_signal->store(true); }

}  // namespace

bool announce_daemon(std::atomic<bool>& stop, const std::string& port_file, int port) {
  g_stop_on_signal = &stop;
  ::signal(SIGTERM, on_signal);
  ::signal(SIGINT, on_signal);
  if (port_file.empty()) return true;
  std::ofstream out(port_file + ".tmp");
  out << port << "\n";
  out.close();
  return out && std::rename((port_file + ".tmp").c_str(), port_file.c_str()) == 0;
}

void add_agent(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string plan, listen = "127.0.0.1:9100", netns, port_file;
    ops::AgentOptions options;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = ops.add_subcommand(
      "agent", "the host agent: probes every NIC's peers on its rail and across rails over several ECMP flows, reads "
               "link counters, serves both as Prometheus metrics on /metrics");
  cmd->add_option("--plan", a->plan, "plan directory (xm ops plan)")->required();
  cmd->add_option("--host", a->options.host, "this host's name in the plan (a switch's: counters only, no probes)")
      ->required();
  cmd->add_option("--listen", a->listen, "ADDRESS:PORT for /metrics (port 0: any free one)")->capture_default_str();
  cmd->add_option("--port-file", a->port_file, "write the port /metrics listens on here once it listens");
  cmd->add_option("--netns", a->netns,
                  "probe from this network namespace (a testbed host), listening for /metrics where started");
  ops::ProberOptions& p = a->options.prober;
  cmd->add_option("--probe-port", p.port, "UDP port every agent answers probes on")->capture_default_str();
  cmd->add_option("--flows", p.flows, "5-tuples per cross-rail pair, to cover the ECMP paths")->capture_default_str();
  cmd->add_option("--cross-rail-peers", a->options.mesh.cross_rail_peers, "cross-rail peers per NIC")
      ->capture_default_str();
  cmd->add_option("--interval", p.interval_s, "seconds between probes of a healthy flow, at most")->capture_default_str();
  cmd->add_option("--budget", p.budget_per_s,
                  "probes a second a healthy agent may send: a small fabric spends it on more flows, then a shorter "
                  "interval (0: --flows and --interval exactly)")
      ->capture_default_str();
  cmd->add_option("--fast-interval", p.fast_interval_s, "seconds between probes of a suspect flow")
      ->capture_default_str();
  cmd->add_option("--hold", p.suspect_hold_s, "seconds a flow stays suspect after its last loss")->capture_default_str();
  cmd->add_option("--timeout", p.timeout_s, "seconds after which an unanswered probe is lost")->capture_default_str();
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("agent", exit_code);
    const ops::ProberOptions& p = a->options.prober;
    if (!(p.interval_s > 0) || !(p.fast_interval_s > 0) || !(p.timeout_s > 0) || p.flows == 0 || p.flows > 64 ||
        !(p.budget_per_s >= 0))
      return fail("--interval, --fast-interval and --timeout must be > 0, --flows 1-64, --budget >= 0", 2);
    Result<ops::FabricPlan> plan = ops::load_plan_dir(a->plan);
    if (!plan) return fail(plan.error().message, 2);
    if (!plan->find(a->options.host)) return fail("no host or switch \"" + a->options.host + "\" in the plan " + a->plan, 2);
    std::unique_ptr<ops::Agent> agent;
    // Bound here, before entering the namespace: /metrics stays on the management side.
    Result<std::unique_ptr<ops::HttpServer>> server = ops::HttpServer::bind(
        a->listen, {{"/metrics", ops::kExpositionContentType, [&agent](const auto&) { return agent->metrics(); }}});
    if (!server) return fail(server.error().message, 2);
    {
      std::optional<testbed::NetnsGuard> in;
      if (!a->netns.empty()) {
        Result<testbed::NetnsGuard> g = testbed::NetnsGuard::enter(a->netns);
        if (!g) return fail(g.error().message, 1);
        in.emplace(std::move(g).value());
      }
      Result<std::unique_ptr<ops::Agent>> opened = ops::Agent::open(*plan, a->options);
      if (!opened) return fail(opened.error().message, 1);
      agent = std::move(opened).value();
    }
    (*server)->start();
    if (!announce_daemon(g_stop, a->port_file, (*server)->port())) return fail("cannot write " + a->port_file, 1);
    const ops::ProberOptions& runs = agent->prober().options();
    std::cerr << "xm ops agent: " << a->options.host << ": probing " << agent->prober().targets().size()
              << " peer NICs (" << runs.flows << " flows per cross-rail pair, every " << runs.interval_s
              << " s); metrics on " << (*server)->address().str() << "/metrics\n";
    agent->run(g_stop);
    server->reset();  // stop serving before the agent it renders goes
  });
}

void add_monitor(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string name = "tb";
    bool stop = false;
    ops::MonitorOptions options;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = ops.add_subcommand(
      "monitor", "start an agent on every host of a testbed and Prometheus scraping them (or --stop them); "
                 "prints where each serves");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_flag("--stop", a->stop, "stop the testbed's agents and Prometheus");
  cmd->add_option("--interval", a->options.prober.interval_s, "agents: seconds between probes of a healthy flow, at most")
      ->capture_default_str();
  cmd->add_option("--flows", a->options.prober.flows, "agents: 5-tuples per cross-rail pair, at least")
      ->capture_default_str();
  cmd->add_option("--budget", a->options.prober.budget_per_s, "agents: probes a second a healthy agent may send")
      ->capture_default_str();
  cmd->add_option("--probe-timeout", a->options.prober.timeout_s, "agents: seconds after which an unanswered probe is lost")
      ->capture_default_str();
  cmd->add_option("--scrape-interval", a->options.scrape_interval_s,
                  "Prometheus: seconds between scrapes, and the controller's between evaluations")
      ->capture_default_str();
  cmd->add_flag("!--no-controller", a->options.controller, "agents and Prometheus only");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("monitor", exit_code);
    if (!testbed::is_root()) return fail(testbed::root_required().message, 1);
    if (a->stop) {
      std::cout << "stopped " << ops::stop_monitor(a->name) << " process(es) of testbed " << a->name << "'s monitor\n";
      return;
    }
    if (!(a->options.prober.interval_s > 0) || !(a->options.scrape_interval_s >= 0.1) || a->options.prober.flows == 0 ||
        !(a->options.prober.budget_per_s >= 0) || !(a->options.prober.timeout_s > 0))
      return fail("--interval and --probe-timeout must be > 0, --scrape-interval at least 0.1, --flows at least 1, "
                  "--budget >= 0",
                  2);
    Result<testbed::Plan> tb = testbed::load_state(a->name);
    if (!tb) return fail(tb.error().message, 2);
    Result<ops::Monitor> m = ops::start_monitor(*tb, a->options);
    if (!m) return fail(m.error().message, 1);
    for (const auto& [host, port] : m->agents)
      std::cout << "agent " << host << "  http://127.0.0.1:" << port << "/metrics\n";
    std::cout << "prometheus  http://127.0.0.1:" << m->prometheus_port << "/  (" << m->prometheus_config
              << "); every agent scraped\n";
    if (m->controller_port)
      std::cout << "controller  http://127.0.0.1:" << m->controller_port << "/api/incidents  (xm ops locate --name "
                << a->name << ")\n";
    std::cout << "stop: xm ops monitor --stop --name " << a->name << "\n";
  });
}

}  // namespace xm::cli
