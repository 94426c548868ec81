#include "cli/sim_command.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>

#include "sim/run.h"
#include "sim/workload/hpcc_config.h"
#include "sim/workload/hpcc_io.h"
#include "topo/spec_io.h"

namespace xm::cli {
namespace {

std::string clock_text(double seconds) {
  char buf[32];
  const long s = long(seconds + 0.5);
  std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

// One line, redrawn in place: [=====>    ]  45%  hpcc (2/3)  sim 4.50/10.00 ms  flows 1234/5000  12.3 Mev/s  ETA 0:42
// Progress is simulated time over the traffic window, then flows finished while draining;
// flows finished alone when none has a start of its own (collectives: all by dependency).
void draw(const sim::Progress& p, bool tty) {
  const bool window = p.traffic_end > sim::Time();
  const double arrive = window ? std::min(1.0, p.now.seconds_f() / p.traffic_end.seconds_f()) : 1.0;
  const double drained = p.flows ? double(p.flows_done) / double(p.flows) : 1.0;
  const double fraction = p.finished ? 1.0 : std::min(0.99, window ? 0.9 * arrive + 0.1 * drained : drained);
  const int width = 24, filled = int(fraction * width);
  std::string bar(size_t(filled), '=');
  if (filled < width) bar += '>' + std::string(size_t(width - filled - 1), ' ');
  const double eta = fraction > 0.01 ? p.wall_seconds * (1 - fraction) / fraction : 0;
  char line[256];
  char sim_time[64];
  if (window) std::snprintf(sim_time, sizeof sim_time, "%.2f/%.2f ms", p.now.seconds_f() * 1e3, p.traffic_end.seconds_f() * 1e3);
  else std::snprintf(sim_time, sizeof sim_time, "%.2f ms", p.now.seconds_f() * 1e3);
  std::snprintf(line, sizeof line, "[%s] %3d%%  %s (%zu/%zu)  sim %s  flows %zu/%zu  %.1f Mev/s  %s %s",
                bar.c_str(), int(fraction * 100), p.cc.c_str(), p.run + 1, p.runs, sim_time, p.flows_done, p.flows,
                p.wall_seconds > 0 ? double(p.events) / p.wall_seconds / 1e6 : 0.0, p.finished ? "took" : "ETA",
                clock_text(p.finished ? p.wall_seconds : eta).c_str());
  if (tty) std::fprintf(stderr, "\r%s\033[K%s", line, p.finished ? "\n" : "");
  else if (p.finished) std::fprintf(stderr, "%s\n", line);
  std::fflush(stderr);
}

// The progress bar for a run, redrawn in place on a terminal, a line per algorithm else.
std::function<void(const sim::Progress&)> progress_bar() {
  const bool tty = isatty(fileno(stderr));
  return [tty](const sim::Progress& p) { draw(p, tty); };
}

bool all_finished(const std::vector<sim::Report>& reports) {
  for (const sim::Report& r : reports)
    if (r.finished < r.flows) return false;
  return true;
}

void add_run(CLI::App& sim, int& exit_code) {
  struct Options {
    std::string scenario, cc, out, engine = "packet";
    bool quiet = false;
    double stop_ms = 0;
    uint64_t seed = 0;
    bool seed_given = false;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = sim.add_subcommand("run", "simulate a scenario under each congestion control; table on stdout, files in --out");
  cmd->add_option("scenario", o->scenario, "scenario YAML (examples/sim/)")->required();
  cmd->add_option("--cc", o->cc, std::string("comma-separated algorithms, instead of the scenario's: ") + sim::cc_names());
  cmd->add_option("-o,--out", o->out, "directory for results (default: out/<scenario name>)");
  cmd->add_option("--stop-ms", o->stop_ms, "simulated-time limit, instead of the scenario's stop_ms");
  cmd->add_option("--seed", o->seed, "seed, instead of the scenario's")->each([o](const std::string&) { o->seed_given = true; });
  cmd->add_option("--engine", o->engine, "packet: every packet, per congestion control; flow: each flow at its max-min fair share (no packets, fast)")
      ->check(CLI::IsMember({"packet", "flow"}))
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "no progress bar");
  cmd->callback([o, &exit_code] {
    Result<sim::Scenario> scenario = sim::load_scenario(o->scenario);
    if (!scenario) {
      std::cerr << "xm sim run: " << scenario.error().message << "\n";
      return void(exit_code = 2);
    }
    if (o->stop_ms > 0) scenario->stop = sim::Time::ms(o->stop_ms);
    if (o->seed_given) scenario->seed = o->seed;
    sim::RunSettings settings;
    settings.engine = o->engine == "flow" ? sim::EngineKind::kFlow : sim::EngineKind::kPacket;
    if (settings.engine == sim::EngineKind::kFlow && !o->cc.empty()) {
      std::cerr << "xm sim run: --cc: the flow engine has no congestion control (it is the fair share); drop --cc or use --engine packet\n";
      return void(exit_code = 2);
    }
    for (size_t start = 0; start < o->cc.size();) {
      size_t comma = o->cc.find(',', start);
      if (comma == std::string::npos) comma = o->cc.size();
      if (comma > start) settings.cc.push_back(o->cc.substr(start, comma - start));
      start = comma + 1;
    }
    settings.out_dir = o->out.empty() ? "out/" + scenario->name : o->out;
    if (!o->quiet) settings.progress = progress_bar();
    Result<std::vector<sim::Report>> reports = sim::run_scenario(*scenario, settings);
    if (!reports) {
      std::cerr << "xm sim run: " << reports.error().message << "\n";
      return void(exit_code = 2);
    }
    std::cout << sim::reports_text(*reports);
    const bool collectives = !reports->empty() && !reports->front().collectives.empty();
    std::cerr << "wrote " << settings.out_dir << "/{summary.csv,slowdown.csv,results.json,slowdown.svg"
              << (settings.engine == sim::EngineKind::kPacket ? ",<cc>/fct.txt" : "")
              << (collectives ? ",<cc>/{collectives,ranks,rails}.csv,<cc>/rails.svg" : "") << "}\n";
    if (!all_finished(*reports)) exit_code = 1;
  });
}

// The HPCC simulator's experiment as it would run it: its config file names the topology,
// flows, FCT file, algorithm and settings (sim/workload/hpcc_config.h); the network follows
// its model (NetModel::kHpcc). Our reports go to --out as `run` writes them.
void add_hpcc(CLI::App& sim, int& exit_code) {
  struct Options {
    std::string config, out;
    bool quiet = false;
    uint64_t seed = 1;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = sim.add_subcommand("hpcc", "run an HPCC simulator config file (config.txt) in the HPCC-compatible model");
  cmd->add_option("config", o->config, "the HPCC simulator's config file")->required();
  cmd->add_option("-o,--out", o->out, "directory for our reports (default: out/<config file name>)");
  cmd->add_option("--seed", o->seed, "seed (ECMP hashes, ECN marks)")->capture_default_str();
  cmd->add_flag("-q,--quiet", o->quiet, "no progress bar");
  cmd->callback([o, &exit_code] {
    Result<sim::HpccExperiment> e = sim::load_hpcc_config(o->config);
    if (!e) return void((std::cerr << "xm sim hpcc: " << e.error().message << "\n", exit_code = 2));
    const sim::Scenario scenario = sim::hpcc_scenario(*e, o->config, o->seed);
    sim::RunSettings settings;
    settings.out_dir = o->out.empty() ? "out/" + scenario.name : o->out;
    settings.fct_file = e->fct_output_file;
    if (!o->quiet) settings.progress = progress_bar();
    Result<std::vector<sim::Report>> reports = sim::run_scenario(scenario, settings);
    if (!reports) return void((std::cerr << "xm sim hpcc: " << reports.error().message << "\n", exit_code = 2));
    std::cout << sim::reports_text(*reports);
    std::cerr << "wrote " << e->fct_output_file << " and " << settings.out_dir << "/{summary.csv,slowdown.csv,results.json,slowdown.svg}\n";
    if (!all_finished(*reports)) exit_code = 1;
  });
}

void add_hpcc_export(CLI::App& sim, int& exit_code) {
  auto spec = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("-");
  CLI::App* cmd = sim.add_subcommand("hpcc-topology", "write a cluster spec's back-end fabric as an HPCC simulator topology file");
  cmd->add_option("spec", *spec, "cluster spec (YAML or JSON)")->required();
  cmd->add_option("-o,--output", *out, "file to write (- for stdout)")->capture_default_str();
  auto dialect = std::make_shared<std::string>("hpcc");
  cmd->add_option("--dialect", *dialect, "hpcc (the HPCC code's header) or simai (ns-3-alibabacloud's)")
      ->check(CLI::IsMember({"hpcc", "simai"}))
      ->capture_default_str();
  cmd->callback([spec, out, dialect, &exit_code] {
    Result<topo::ClusterSpec> s = topo::load_spec(*spec);
    if (!s) return void((std::cerr << "xm sim hpcc-topology: " << s.error().message << "\n", exit_code = 2));
    Result<topo::Fabric> f = topo::build_fabric(*s);
    if (!f) return void((std::cerr << "xm sim hpcc-topology: " << *spec << ": " << f.error().message << "\n", exit_code = 2));
    Result<sim::SimTopology> t = sim::topology_from_fabric(*f);
    if (!t) return void((std::cerr << "xm sim hpcc-topology: " << t.error().message << "\n", exit_code = 2));
    const std::string text =
        sim::format_hpcc_topology(*t, *dialect == "simai" ? sim::HpccDialect::kSimai : sim::HpccDialect::kHpcc);
    if (*out == "-") {
      std::cout << text;
      return;
    }
    std::ofstream file(*out);
    file << text;
    if (!file) return void((std::cerr << "xm sim hpcc-topology: " << *out << ": cannot write\n", exit_code = 1));
  });
}

// The flows a scenario makes, in the HPCC simulator's flow format (node ids as
// `hpcc-topology` numbers them), so another simulator can run the very same workload.
void add_hpcc_flows(CLI::App& sim, int& exit_code) {
  auto path = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>("-");
  CLI::App* cmd = sim.add_subcommand("hpcc-flows", "write a scenario's flows as an HPCC simulator flow file");
  cmd->add_option("scenario", *path, "scenario file (YAML)")->required();
  cmd->add_option("-o,--output", *out, "file to write (- for stdout)")->capture_default_str();
  cmd->callback([path, out, &exit_code] {
    Result<sim::Scenario> s = sim::load_scenario(*path);
    if (!s) return void((std::cerr << "xm sim hpcc-flows: " << s.error().message << "\n", exit_code = 2));
    Result<sim::SimTopology> t = sim::scenario_topology(*s);
    if (!t) return void((std::cerr << "xm sim hpcc-flows: " << t.error().message << "\n", exit_code = 2));
    Result<sim::Traffic> traffic = sim::scenario_flows(*s, *t);
    if (!traffic) return void((std::cerr << "xm sim hpcc-flows: " << traffic.error().message << "\n", exit_code = 2));
    const std::string text = sim::format_hpcc_flows(traffic->flows, *t);
    if (*out == "-") {
      std::cout << text;
      return;
    }
    std::ofstream file(*out);
    file << text;
    if (!file) return void((std::cerr << "xm sim hpcc-flows: " << *out << ": cannot write\n", exit_code = 1));
  });
}

}  // namespace

void add_sim_commands(CLI::App& app, int& exit_code) {
  CLI::App* sim = app.add_subcommand("sim", "packet-level fabric simulator: RoCEv2, PFC, ECN, DCQCN, HPCC, TiTa");
  sim->require_subcommand(1);
  add_run(*sim, exit_code);
  add_hpcc(*sim, exit_code);
  add_hpcc_export(*sim, exit_code);
  add_hpcc_flows(*sim, exit_code);
}

}  // namespace xm::cli
