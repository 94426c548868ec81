// Monitoring a testbed (`xm ops monitor`): an agent on every host and switch (`xm ops
// agent` in its namespace: a host's probes and counts, a switch's only counts; /metrics
// on the loopback of the root namespace, the management side), Debian's Prometheus
// scraping them all from a generated configuration, and the controller reading
// Prometheus (`xm ops controller`, controller.h).
//
//   runtime_dir(NAME)/<device>/agent.{pid,port,log}
//   runtime_dir(NAME)/monitor/prometheus.{yml,pid,port,log}, prometheus-data/
//   runtime_dir(NAME)/monitor/controller.{pid,port,log}
//   runtime_dir(NAME)/monitor/rail-advice   the rails the controller advises against
//                                           (testbed::rail_advice_path; jobs read it)
//
// `xm testbed down` stops them with the rest (testbed::stop_daemons_under).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "ops/prober.h"
#include "testbed/plan.h"
#include "util/result.h"

namespace xm::ops {

struct MonitorOptions {
  std::string agent_binary;  // the xm that runs `ops agent`; default: this process's
  ProberOptions prober;      // what every agent is started with
  double scrape_interval_s = 1;  // Prometheus's, and the controller's between evaluations
  bool controller = true;
};

struct Monitor {
  std::vector<std::pair<std::string, int>> agents;  // device, /metrics port on 127.0.0.1
  int prometheus_port = 0;
  std::string prometheus_config;
  int controller_port = 0;  // 0: not started
};

// The scrape configuration for agents at 127.0.0.1:<port>: one job, a target per host
// labelled with it.
std::string prometheus_config(const std::string& testbed, const std::vector<std::pair<std::string, int>>& agents,
                              double scrape_interval_s);

// Starts every agent, waits until each serves /metrics, then starts Prometheus and waits
// until it is ready and has scraped every agent once, then the controller. On error stops
// what it started.
Result<Monitor> start_monitor(const testbed::Plan& plan, const MonitorOptions& options);

// Stops the agents, Prometheus and the controller of testbed NAME; how many processes it stopped.
int stop_monitor(const std::string& name);

// The port a daemon wrote to `path` (agent.port, prometheus.port, controller.port); 0
// when there is none.
int read_port_file(const std::string& path);

// Where the monitor of testbed NAME keeps Prometheus.
std::string monitor_dir(const std::string& name);

}  // namespace xm::ops
