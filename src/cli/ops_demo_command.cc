// `xm ops demo`: the operations system end to end, on built-in defaults. It deploys a
// small routed cluster (FRR and lldpd on every switch), starts the monitor (an agent per
// device, Prometheus, the controller), runs an xccl all-reduce across it, injects a fault,
// prints the incident as `xm ops locate` names it and the heal the controller took, shows
// the job's throughput before the fault, between fault and heal and after, and removes
// everything it built.
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <set>
#include <memory>
#include <sstream>
#include <thread>

#include "cli/ops_command.h"
#include "ops/deploy.h"
#include "ops/monitor.h"
#include "ops/prometheus_client.h"
#include "testbed/daemons.h"
#include "testbed/injected_faults.h"
#include "testbed/launcher.h"
#include "testbed/lifecycle.h"
#include "testbed/system.h"
#include "topo/spec_io.h"
#include "util/clock.h"
#include "util/format.h"

namespace xm::cli {
namespace {

// Four servers with four accelerators and four 100 Gbit/s NICs each, a ToR per rail, two
// spines: small enough to come up in seconds here, routed like the real fabric. Four
// rails, not two: with two ToRs every path through one ToR's spine link also crosses the
// other's, and no probe could tell the two cables apart.
constexpr char kSpec[] = R"(name: demo
servers: 4
server:
  accelerators: 4
  nics: 4
  nic_gbps: 100
fabric:
  kind: rail-optimized
  tor: {ports: 8, servers: 4, uplinks: 2}
  agg: {count: 2, tors: 4, link: {gbps: 100}}
)";

constexpr uint32_t kRanksPerHost = 2;

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

// SIGINT, SIGTERM and SIGHUP end the demo through its teardown instead of killing it
// with the testbed standing. (While the job runs, the launcher's own handler stops it.)
class DemoSignals {
 public:
  DemoSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &sa, &old_[i]);
  }
  ~DemoSignals() {
    for (int i = 0; i < 3; ++i) ::sigaction(kSignals[i], &old_[i], nullptr);
  }

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction old_[3];
};

struct DemoArgs {
  std::string name = "demo", inject = "loss", at = "tor0:spine1", value = "5%", perf;
  double before_s = 10, after_s = 10, locate_timeout_s = 60;
  bool keep = false, replace = false;
};

// xccl-perf beside this xm (build/src/xm and build/tools/xccl-perf, or one bin/), else on PATH.
std::string find_perf() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const auto& p : {self.parent_path() / "xccl-perf", self.parent_path().parent_path() / "tools" / "xccl-perf"})
      if (::access(p.c_str(), X_OK) == 0) return p.string();
  return "xccl-perf";
}

// One row of xccl-perf's table, when it arrived.
struct Row {
  double t = 0;        // seconds since the job started
  double busbw = 0;    // MB/s, out-of-place and in-place averaged
  long long wrong = 0; // elements that differed from the exact result
  double wire_mbps = -1;  // what the hosts' NICs sent then, from Prometheus; -1: unknown
};

// Follows the job's log as the launcher appends to it: rank 0's table rows, and every line
// that is not one (kept, to show when the job fails).
class JobLog {
 public:
  // bus_factor: busbw / algbw of the collective (an all-reduce of n ranks: 2(n-1)/n).
  JobLog(std::string path, double bus_factor) : path_(std::move(path)), bus_factor_(bus_factor) {}

  std::vector<Row> new_rows(double t) {
    std::vector<Row> rows;
    std::ifstream in(path_);
    in.seekg(offset_);
    std::string line;
    while (std::getline(in, line)) {
      if (in.eof()) break;  // a line still being written: read it next time
      offset_ += std::streamoff(line.size() + 1);
      Row r;
      if (parse(line, r)) {
        r.t = t;
        rows.push_back(r);
      } else {
        other_.push_back(line);
        if (other_.size() > 20) other_.erase(other_.begin());
      }
    }
    return rows;
  }
  const std::vector<std::string>& last_other_lines() const { return other_; }

 private:
  // "[rank 0]  size count type op root time algbw busbw #wrong time algbw busbw #wrong":
  // busbw from the size and the times (µs), not the printed GB/s, which at the testbed's
  // scaled rates has one significant digit.
  bool parse(const std::string& line, Row& r) const {
    const std::string prefix = "[rank 0] ";
    if (line.rfind(prefix, 0) != 0) return false;
    std::istringstream in(line.substr(prefix.size()));
    std::string f[13];
    for (std::string& s : f)
      if (!(in >> s)) return false;
    char* end = nullptr;
    const double size = std::strtod(f[0].c_str(), &end);
    if (*end) return false;
    const double out = std::strtod(f[5].c_str(), &end);
    if (*end || !(out > 0)) return false;
    const double in_place = std::strtod(f[9].c_str(), &end);
    if (*end || !(in_place > 0)) return false;
    r.busbw = (size / out + size / in_place) / 2 * bus_factor_;  // bytes per µs: MB/s
    r.wrong = std::atoll(f[8].c_str()) + std::atoll(f[12].c_str());
    return true;
  }

  std::string path_;
  double bus_factor_;
  std::streamoff offset_ = 0;
  std::vector<std::string> other_;
};

double median(std::vector<double> v) {
  if (v.empty()) return -1;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

std::string fixed(double v, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

// Everything the demo does after deploying, so that one teardown follows whatever happens.
class Demo {
 public:
  Demo(const DemoArgs& a, const testbed::Plan& plan, const ops::Monitor& monitor)
      : a_(a), plan_(plan), monitor_(monitor), prometheus_("127.0.0.1", monitor.prometheus_port, 2),
        log_path_(testbed::runtime_dir(a.name) + "/demo-job.log"), log_(log_path_, 2.0 * (ranks() - 1) / ranks()) {
    std::string hosts, nics;
    for (const testbed::HostPlan& h : plan.hosts) {
      hosts += (hosts.empty() ? "" : "|") + h.name;
      for (const testbed::NicPlan& n : h.nics)
        if (nics.find(n.ifname) == std::string::npos) nics += (nics.empty() ? "" : "|") + n.ifname;
    }
    wire_query_ = "sum(rate(node_network_transmit_bytes_total{host=~\"" + hosts + "\",device=~\"" + nics + "\"}[3s])) * 8";
  }
  ~Demo() { stop_job(); }
  size_t ranks() const { return plan_.hosts.size() * kRanksPerHost; }

  // 0: the fault was located at the cable it was injected on and healed, the job's
  // results exact throughout; 1 otherwise; 128 + signal when interrupted.
  int run() {
    if (Status s = start_job(); !s) return fail(s.message());
    std::cout << "[job]     " << ranks() << " ranks, " << kRanksPerHost << " per host, each on its own rail (0 and 1): xccl all-reduce of "
                 "1 MiB in a ring, every result checked\n";
    if (!wait_rows(2, a_.before_s, 90)) return fail("the job did not run: " + job_problem());

    const double injected = unix_seconds(), injected_job_t = job_seconds();
    testbed::InjectedFault fault;
    fault.kind = *testbed::parse_fault_kind(a_.inject);
    fault.at = a_.at;
    fault.value = a_.value;
    Result<std::string> done = testbed::inject(a_.name, fault);
    if (!done) return fail(done.error().message);
    std::cout << "[fault]   " << *done << "\n";

    nlohmann::json incident = wait_incident(injected, -1);
    if (incident.is_null())
      return interrupted_or("the controller did not locate the fault at " + a_.at + " within " + trimmed(a_.locate_timeout_s) + " s");
    const long long id = incident["id"].get<long long>();
    incident = wait_incident(injected, id);
    if (incident.is_null()) return interrupted_or("the controller did not heal incident " + std::to_string(id));
    const double healed = incident["healed_at"].get<double>(), healed_job_t = job_seconds() - (unix_seconds() - healed);
    print_heal_actions(incident["id"].get<long long>(), injected);

    if (!wait_rows(2, healed_job_t + 1 + a_.after_s - job_seconds(), a_.after_s + 60)) return fail("the job stopped after the heal: " + job_problem());
    stop_job();
    summarize(injected_job_t, healed_job_t);
    if (wrong_ > 0) return fail(std::to_string(wrong_) + " element(s) differed from the exact result");
    if (false_alarms_ > 0) return fail(std::to_string(false_alarms_) + " incident(s) named what the fault was not injected on");
    return 0;
  }

 private:
  Status start_job() {
    std::error_code ec;
    std::filesystem::remove(log_path(), ec);
    testbed::RunOptions o;
    o.ranks_per_host = kRanksPerHost;
    o.rails = testbed::RailMode::kOwn;
    o.output = log_path();
    o.stop = &stop_;
    // A ring keeps the same paths the whole run, so a fault on one spine link shows.
    o.command = {"env", "XCCL_ALGO=all_reduce:ring", a_.perf, "all_reduce", "-b", "1M", "-e", "1M", "-n", "1", "-w", "0", "-c", "1", "-N", "0"};
    if (!testbed::is_root()) return testbed::root_required();
    start_ = std::chrono::steady_clock::now();
    job_ = std::thread([this, o] {
      Result<int> r = testbed::run_job(plan_, o);
      job_status_ = r ? *r : 127;
      if (!r) job_error_ = r.error().message;  // read only after job_done_
      job_done_ = true;
    });
    return {};
  }

  void stop_job() {
    stop_ = true;
    if (job_.joinable()) job_.join();
  }

  double job_seconds() const { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }
  const std::string& log_path() const { return log_path_; }

  // Reads new rows (printing each with what the NICs send) until at least `min_rows` came in
  // and `seconds` passed, or `limit` seconds, the job's end or a signal; whether it got there.
  bool wait_rows(size_t min_rows, double seconds, double limit) {
    const double from = job_seconds();
    size_t got = 0;
    while (!g_signal && !job_done_ && job_seconds() - from < limit) {
      got += poll_rows();
      if (got >= min_rows && job_seconds() - from >= seconds) return true;
      sleep_s(0.1);
    }
    poll_rows();  // what the job wrote last, to say why it ended
    return false;
  }

  size_t poll_rows() {
    std::vector<Row> rows = log_.new_rows(job_seconds());
    for (Row& r : rows) {
      Result<std::vector<ops::PromSample>> wire = prometheus_.query(wire_query_);
      if (wire && !wire->empty()) r.wire_mbps = wire->front().value / 1e6;
      wrong_ += r.wrong;
      std::cout << "  [" << std::setw(5) << fixed(r.t, 1) << " s] busbw "
                << fixed(r.busbw, 2) << " MB/s   the hosts' NICs send " << (r.wire_mbps < 0 ? "?" : fixed(r.wire_mbps, 0))
                << " Mbit/s   " << (r.wrong ? std::to_string(r.wrong) + " WRONG" : "exact") << "\n"
                << std::flush;
      rows_.push_back(r);
    }
    return rows.size();
  }

  // Without `healed_id`: waits for the incident that names the component the fault was
  // injected on, printing every incident opened since `since` (unix seconds) as it opens,
  // the right one and any other (a false alarm). With it: waits for that incident's heal.
  // Null when neither comes within the timeout; the job's rows print meanwhile.
  nlohmann::json wait_incident(double since, long long healed_id) {
    const double from = job_seconds();
    while (!g_signal && job_seconds() - from < a_.locate_timeout_s) {
      poll_rows();
      Result<std::string> body = ask_controller(a_.name, monitor_.controller_port, false, "/api/incidents?all=1");
      nlohmann::json j = body ? nlohmann::json::parse(*body, nullptr, false) : nlohmann::json();
      nlohmann::json found;
      if (j.is_object() && j.contains("incidents"))
        for (const auto& i : j["incidents"]) {
          const long long id = i["id"].get<long long>();
          if (healed_id >= 0) {
            if (id == healed_id && !i["healed_at"].is_null()) return i;
            continue;
          }
          if (i["opened_at"].get<double>() < since || !shown_.insert(id).second) continue;
          const bool right = i["component"].get<std::string>().find(a_.at) != std::string::npos;
          std::cout << "[located] " << fixed(i["opened_at"].get<double>() - since, 2) << " s after the fault, as `xm ops locate --name "
                    << a_.name << "` names it:\n"
                    << describe_incident(i) << "          "
                    << (right ? "that is the cable the fault was injected on" : "a FALSE ALARM: the fault is at " + a_.at) << "\n";
          if (!right) ++false_alarms_;
          if (right && found.is_null()) found = i;
        }
      if (!found.is_null()) return found;
      sleep_s(0.25);
    }
    return nullptr;
  }

  void print_heal_actions(long long incident, double injected) {
    Result<std::string> body = ask_controller(a_.name, monitor_.controller_port, false, "/api/actions");
    nlohmann::json j = body ? nlohmann::json::parse(*body, nullptr, false) : nlohmann::json();
    if (!j.is_object() || !j.contains("actions")) return;
    std::map<std::string, size_t> drained;  // ToR: its uplinks drained
    for (const auto& x : j["actions"]) {
      if (x["incident"].get<long long>() != incident) continue;
      const std::string component = x["component"].get<std::string>();
      if (x["action"] == "drain" && x["ok"].get<bool>()) ++drained[component.substr(0, component.find(':'))];
      std::cout << "[healed]  " << fixed(x["at"].get<double>() - injected, 2) << " s after the fault: "
                  << x["action"].get<std::string>() << " " << x["component"].get<std::string>() << " (by "
                  << x["by"].get<std::string>() << "; " << x["reason"].get<std::string>() << ")"
                  << (x["ok"].get<bool>() ? "" : " FAILED") << "\n";
    }
    // What the drain leaves, to read the job's rate after it by.
    for (const auto& [tor, count] : drained) {
      size_t uplinks = 0;
      uint64_t rate = 0;
      for (const testbed::UplinkPlan& u : plan_.uplinks)
        if (u.tor == tor) ++uplinks, rate = u.rate_bps;
      if (uplinks == 0) continue;
      std::cout << "          " << tor << " reaches the spines over " << uplinks - count << " of its " << uplinks << " uplinks now ("
                << trimmed(double(uplinks - count) * rate / 1e6) << " of " << trimmed(double(uplinks) * rate / 1e6)
                << " Mbit/s): what crosses rails through it has that much room\n";
    }
  }

  // The phases' medians, side by side.
  void summarize(double injected_t, double healed_t) const {
    struct Phase {
      const char* name;
      double from, to;
    };
    const double end = rows_.empty() ? healed_t : rows_.back().t;
    // A row arriving just after a boundary was mostly run before it; the heal's phase
    // ends a second later, as TCP's windows reopen.
    const Phase phases[] = {{"before the fault", 0, injected_t}, {"fault to heal", injected_t, healed_t + 1}, {"after the heal", healed_t + 1, end}};
    double base = -1;
    std::cout << "\n  phase              seconds   rows   busbw MB/s   NICs send Mbit/s   busbw vs before\n";
    for (const Phase& p : phases) {
      std::vector<double> bus, wire;
      for (const Row& r : rows_)
        if (r.t > p.from && r.t <= p.to) {
          bus.push_back(r.busbw);
          if (r.wire_mbps >= 0) wire.push_back(r.wire_mbps);
        }
      const double b = median(bus), w = median(wire);
      if (base < 0) base = b;
      char line[160];
      std::snprintf(line, sizeof line, "  %-16s %9.1f %6zu %12s %18s %17s\n", p.name, p.to - p.from, bus.size(),
                    b < 0 ? "-" : fixed(b, 2).c_str(), w < 0 ? "-" : fixed(w, 0).c_str(),
                    b < 0 || base <= 0 ? "-" : fixed(b / base, 2).c_str());
      std::cout << line;
    }
    std::cout << "  (medians of the job's rows; busbw as nccl-tests computes it; the NICs' rate from Prometheus)\n"
              << "  " << rows_.size() << " rows, " << (wrong_ ? std::to_string(wrong_) + " element(s) WRONG" : "every result exact") << "\n";
  }

  std::string job_problem() {
    if (int s = interrupted_by()) return "interrupted by signal " + std::to_string(s);
    std::string why = job_done_ ? "it exited with status " + std::to_string(job_status_.load()) : "no rows from it";
    if (!job_error_.empty() && job_done_) why += " (" + job_error_ + ")";
    for (const std::string& l : log_.last_other_lines()) why += "\n    " + l;
    return why;
  }

  // The signal that ended the demo: one it caught, or one the launcher caught while the
  // job ran (and said so in the job's log); 0 when none did.
  int interrupted_by() const {
    if (g_signal) return g_signal;
    const std::string said = "xm testbed run: interrupted by signal ";
    for (const std::string& l : log_.last_other_lines())
      if (l.rfind(said, 0) == 0) return std::atoi(l.c_str() + said.size());
    return 0;
  }
  int fail(const std::string& why) {
    std::cerr << "xm ops demo: " << why << "\n";
    const int s = interrupted_by();
    return s ? 128 + s : 1;
  }
  int interrupted_or(const std::string& why) { return fail(g_signal ? "interrupted by signal " + std::to_string(g_signal) : why); }

  const DemoArgs& a_;
  const testbed::Plan& plan_;
  const ops::Monitor& monitor_;
  ops::PrometheusClient prometheus_;
  std::string log_path_;
  JobLog log_;
  std::string wire_query_;
  std::chrono::steady_clock::time_point start_;
  std::thread job_;
  std::atomic<bool> stop_{false}, job_done_{false};
  std::atomic<int> job_status_{0};
  std::string job_error_;
  std::vector<Row> rows_;
  long long wrong_ = 0;
  std::set<long long> shown_;  // incidents printed
  size_t false_alarms_ = 0;
};

int run_demo(const DemoArgs& a) {
  auto fail = [](const std::string& why, int code) {
    std::cerr << "xm ops demo: " << why << "\n";
    return code;
  };
  if (!testbed::is_root()) return fail(testbed::root_required().message, 1);
  Result<topo::ClusterSpec> spec = topo::parse_spec(kSpec, "the demo's built-in spec");
  if (!spec) return fail(spec.error().message, 1);
  DemoSignals signals;

  std::cout << "[deploy]  " << spec->servers << " servers x " << spec->server.nics.size()
            << " NICs, a ToR per rail, 2 spines; FRR (BGP) and lldpd on every switch\n"
            << std::flush;
  ops::DeployOptions d;
  d.testbed.name = a.name;
  d.replace = a.replace;
  Result<ops::Deployed> deployed = ops::deploy_testbed(*spec, "the demo's built-in spec", d);
  if (!deployed) return fail(deployed.error().message, g_signal ? 128 + g_signal : 1);
  double total = 0;
  for (const auto& stage : deployed->stages) total += stage.second;
  std::cout << "          testbed " << a.name << " up in " << trimmed(total, 3) << " s: " << deployed->plan.hosts.size() << " hosts, "
            << deployed->plan.switches.size() << " switches; " << deployed->reach.pairs << " NIC pairs reach each other\n";
  if (const testbed::Plan& p = deployed->plan; !p.uplinks.empty() && !p.hosts.empty() && !p.hosts[0].nics.empty()) {
    const double nic = double(p.hosts[0].nics[0].rate_bps), up = double(p.uplinks[0].rate_bps);
    const double per_tor = double(p.uplinks.size()) / double(p.rails.size());
    std::cout << "          NICs at " << trimmed(nic / 1e6) << " Mbit/s, ToR-spine links at " << trimmed(up / 1e6)
              << " Mbit/s (the spec's rates scaled 1:1000); each ToR " << ratio(nic * double(p.hosts.size()) / (up * per_tor))
              << " down:up\n";
  }

  int code = 1;
  if (!g_signal) {
    Result<ops::Monitor> monitor = ops::start_monitor(deployed->plan, ops::MonitorOptions{});
    if (!monitor) {
      code = fail(monitor.error().message, 1);
    } else {
      std::cout << "[monitor] " << monitor->agents.size() << " agents, Prometheus on 127.0.0.1:" << monitor->prometheus_port
                << ", the controller's dashboard on http://127.0.0.1:" << monitor->controller_port << "/\n";
      code = Demo(a, deployed->plan, *monitor).run();
    }
  }

  if (a.keep) {
    std::cout << "[kept]    testbed " << a.name << " as it is now; `xm ops locate --name " << a.name << " --all`, then `xm testbed down --name "
              << a.name << "`\n";
    return code;
  }
  Result<testbed::Removed> removed = testbed::down(a.name);
  if (!removed) return fail("tearing down: " + removed.error().message, 1);
  std::cout << "[down]    removed " << removed->namespaces.size() << " namespaces and " << removed->processes_killed
            << " processes (FRR, lldpd, agents, Prometheus, the controller)\n";
  return code;
}

}  // namespace

void add_demo(CLI::App& ops, int& exit_code) {
  auto a = std::make_shared<DemoArgs>();
  CLI::App* cmd = ops.add_subcommand(
      "demo", "deploy a small routed cluster, monitor it, run an xccl job across it, inject a fault and show it located, "
              "healed and what the job saw; then remove everything (needs root)");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_option("--inject", a->inject, "the fault, as `xm testbed fault --inject` takes it")->capture_default_str();
  cmd->add_option("--at", a->at, "where")->capture_default_str();
  cmd->add_option("--value", a->value, "how much")->capture_default_str();
  cmd->add_option("--before", a->before_s, "seconds of the job before the fault")->capture_default_str();
  cmd->add_option("--after", a->after_s, "seconds of the job after the heal")->capture_default_str();
  cmd->add_option("--locate-timeout", a->locate_timeout_s, "seconds to wait for the incident, and again for its heal")
      ->capture_default_str();
  cmd->add_option("--perf", a->perf, "the xccl-perf to run (default: the one beside xm, else on PATH)");
  cmd->add_flag("--replace", a->replace, "replace a testbed of that name");
  cmd->add_flag("--keep", a->keep, "leave the testbed, the monitor and the fault as they are at the end");
  cmd->callback([a, &exit_code] {
    if (Status s = testbed::check_name(a->name); !s) return void(failure_reporter("demo", exit_code)(s.message(), 2));
    Result<testbed::FaultKind> kind = testbed::parse_fault_kind(a->inject);
    if (!kind) return void(failure_reporter("demo", exit_code)(kind.error().message, 2));
    if (testbed::is_miswire(*kind))
      return void(failure_reporter("demo", exit_code)(a->inject + " is a miswire, for `xm ops validate`; the demo injects a data-plane fault", 2));
    if (!(a->before_s >= 0) || !(a->after_s >= 0) || !(a->locate_timeout_s > 0))
      return void(failure_reporter("demo", exit_code)("--before and --after must be >= 0, --locate-timeout > 0", 2));
    if (a->perf.empty()) a->perf = find_perf();
    exit_code = run_demo(*a);
  });
}

}  // namespace xm::cli
