#include "cli/ops_command.h"

#include <chrono>
#include <iostream>
#include <memory>

#include <algorithm>
#include <iomanip>
#include <filesystem>

#include "ops/collect.h"
#include "ops/deploy.h"
#include "ops/inventory.h"
#include "ops/plan_dir.h"
#include "ops/validate.h"
#include "ops/watch.h"
#include "testbed/daemons.h"
#include "testbed/state.h"
#include "testbed/system.h"
#include "testbed/units.h"
#include "topo/spec_io.h"
#include "util/clock.h"
#include "util/format.h"

namespace xm::cli {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

struct PlanArgs {
  std::string spec, out, check, postgres;
  ops::PlanOptions options;
};

int run_check(const std::string& dir) {
  Result<std::vector<std::string>> problems = ops::check_plan_dir(dir);
  if (!problems) {
    std::cerr << "xm ops plan --check: " << problems.error().message << "\n";
    return 2;
  }
  for (const std::string& p : *problems) std::cout << dir << "/" << p << "\n";
  if (!problems->empty()) {
    std::cerr << "xm ops plan --check: " << problems->size() << " problem(s) in " << dir << "\n";
    return 1;
  }
  std::cout << dir << ": the plan, every file as its spec gives it\n";
  return 0;
}

int run_plan(const PlanArgs& a) {
  auto start = std::chrono::steady_clock::now();
  Result<topo::ClusterSpec> spec = topo::load_spec(a.spec);
  if (!spec) {
    std::cerr << "xm ops plan: " << spec.error().message << "\n";
    return 2;
  }
  Result<ops::FabricPlan> plan = ops::make_plan(*spec, a.options);
  if (!plan) {
    std::cerr << "xm ops plan: " << a.spec << ": " << plan.error().message << "\n";
    return 2;
  }
  if (Status s = ops::write_plan_dir(*plan, a.out); !s) {
    std::cerr << "xm ops plan: " << s.message() << "\n";
    return 1;
  }
  if (!a.postgres.empty())
    if (Status s = ops::load_postgres(a.postgres, ops::inventory_sql(*plan)); !s) {
      std::cerr << "xm ops plan: " << s.message() << "\n";
      return 1;
    }
  size_t hosts = plan->of_role(ops::Role::kHost).size();
  std::cout << "planned " << spec->name << " in " << a.out << ": " << with_commas(hosts) << " hosts, "
            << with_commas(plan->devices.size() - hosts) << " switches, " << with_commas(plan->cables.size())
            << " cables (" << trimmed(seconds_since(start), 3) << " s)\n";
  return 0;
}

void add_plan(CLI::App& ops, int& exit_code) {
  auto a = std::make_shared<PlanArgs>();
  CLI::App* cmd = ops.add_subcommand(
      "plan", "from a cluster spec: cabling (CSV, PTM topology.dot), addresses, host and FRR configuration, inventory");
  cmd->add_option("spec", a->spec, "cluster spec (YAML or JSON)");
  cmd->add_option("-o,--output", a->out, "directory to write the plan into (replaces an earlier plan there)");
  cmd->add_option("--check", a->check, "re-read a plan directory and report every file that differs from its spec");
  cmd->add_option("--subnet", a->options.subnet, "host subnets from 10.S.0.0")->capture_default_str();
  cmd->add_option("--mtu", a->options.mtu, "MTU of every fabric port")->capture_default_str();
  cmd->add_option("--bfd-interval", a->options.bfd_interval_ms, "BFD transmit and receive interval, ms")
      ->capture_default_str();
  cmd->add_option("--pfc-priority", a->options.qos.pfc_priority, "lossless priority for RoCE")->capture_default_str();
  cmd->add_option("--dscp", a->options.qos.dscp, "DSCP of RoCE traffic")->capture_default_str();
  cmd->add_option("--postgres", a->postgres, "also load the inventory into this PostgreSQL database (libpq conninfo)");
  cmd->callback([a, &exit_code] {
    if (!a->check.empty()) {
      if (!a->spec.empty() || !a->out.empty()) {
        std::cerr << "xm ops plan: --check DIR takes no spec or --output\n";
        return void(exit_code = 2);
      }
      return void(exit_code = run_check(a->check));
    }
    if (a->spec.empty() || a->out.empty()) {
      std::cerr << "xm ops plan: expected SPEC -o DIR (or --check DIR)\n";
      return void(exit_code = 2);
    }
    exit_code = run_plan(*a);
  });
}

// A spec file, or a plan directory (its spec and options).
Result<topo::ClusterSpec> load_input(const std::string& input, testbed::PlanOptions& options) {
  if (!std::filesystem::is_directory(input)) return topo::load_spec(input);
  Result<ops::FabricPlan> plan = ops::load_plan_dir(input);
  if (!plan) return plan.error();
  options.subnet = plan->options.subnet;
  options.mtu = plan->options.mtu;
  return plan->spec;
}

void add_deploy(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string input, emit, rate, spine_rate;
    ops::DeployOptions options;
  };
  auto a = std::make_shared<Args>();
  a->options.testbed.name = "tb";
  CLI::App* cmd = ops.add_subcommand(
      "deploy", "plan if needed and bring the cluster up on the testbed (or --emit the files for real devices); "
                "waits for BGP, routes and reachability, and times each stage");
  cmd->add_option("input", a->input, "cluster spec, or a plan directory")->required();
  cmd->add_option("--name", a->options.testbed.name, "testbed name")->capture_default_str();
  cmd->add_option("--emit", a->emit, "write the plan's files for real devices into this directory instead");
  cmd->add_option("--rate", a->rate, "line rate of every NIC (tc units); default: the spec's speed scaled 1:1000");
  cmd->add_option("--spine-rate", a->spine_rate, "rate of each ToR-spine link; default: non-blocking");
  cmd->add_option("--spines", a->options.testbed.spines, "spines, for a spec without a spine tier")->capture_default_str();
  cmd->add_flag("--replace", a->options.replace, "remove a testbed of the same name first");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("deploy", exit_code);
    auto start = std::chrono::steady_clock::now();
    testbed::PlanOptions& t = a->options.testbed;
    Result<topo::ClusterSpec> spec = load_input(a->input, t);
    if (!spec) return fail(spec.error().message, 2);
    if (!a->emit.empty()) {
      ops::PlanOptions po;
      po.subnet = t.subnet;
      po.mtu = t.mtu;
      Result<ops::FabricPlan> plan = ops::make_plan(*spec, po);
      if (!plan) return fail(a->input + ": " + plan.error().message, 2);
      if (Status s = ops::write_plan_dir(*plan, a->emit); !s) return fail(s.message(), 1);
      std::cout << "wrote the plan for real devices to " << a->emit << ": on each server run hosts/<name>.sh; on each "
                << "switch install switches/<name>/interfaces (ifupdown2) and frr.conf (FRR), then `xm ops validate`\n";
      return;
    }
    for (auto [text, out] : {std::pair{&a->rate, &t.rate_bps}, std::pair{&a->spine_rate, &t.spine_rate_bps}}) {
      if (text->empty()) continue;
      Result<uint64_t> r = testbed::parse_rate(*text);
      if (!r) return fail(r.error().message, 2);
      *out = *r;
    }
    if (!testbed::is_root()) return fail(testbed::root_required().message, 1);
    Result<ops::Deployed> d = ops::deploy_testbed(*spec, a->input, a->options);
    if (!d) return fail(d.error().message, 1);
    std::cout << "deployed " << spec->name << " as testbed " << d->plan.name << ": " << d->plan.hosts.size() << " hosts, "
              << d->plan.switches.size() << " switches, " << d->plan.uplinks.size() << " ToR-spine links\n";
    for (const auto& [stage, seconds] : d->stages) std::cout << "  " << stage << std::string(9 - stage.size(), ' ')
                                                             << trimmed(seconds, 3) << " s\n";
    std::cout << "  total    " << trimmed(seconds_since(start), 3) << " s; " << d->reach.pairs << " NIC pairs reach each other ("
              << d->reach.same_rail << " on one rail: one ToR hop; the rest through the spines)\n";
  });
}

void add_validate(CLI::App& ops, int& exit_code) {
  struct Args {
    std::string name = "tb", plan;
    bool json = false, all = false, watch = false;
    double seconds = 0;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = ops.add_subcommand(
      "validate", "compare the running testbed with its plan port by port: LLDP neighbours, link state, MTU, addresses, "
                  "BGP sessions, ECMP; exit 1 on any finding");
  cmd->add_option("--name", a->name, "testbed name")->capture_default_str();
  cmd->add_option("--plan", a->plan, "plan directory to compare with (default: the one the testbed was deployed from)");
  cmd->add_flag("--json", a->json, "JSON for programs (ptmctl -j field names)");
  cmd->add_flag("--all", a->all, "list passing ports too");
  cmd->add_flag("--watch", a->watch, "validate again on every link change (and as LLDP catches up); print each change");
  cmd->add_option("--for", a->seconds, "with --watch: stop after this many seconds (default: run until interrupted)");
  cmd->callback([a, &exit_code] {
    auto fail = failure_reporter("validate", exit_code);
    auto start = std::chrono::steady_clock::now();
    if (!testbed::is_root()) return fail(testbed::root_required().message, 1);
    Result<testbed::Plan> tb = testbed::load_state(a->name);
    if (!tb) return fail(tb.error().message, 2);
    Result<ops::FabricPlan> plan = ops::load_plan_dir(a->plan.empty() ? testbed::plan_dir(a->name) : a->plan);
    if (!plan) return fail(plan.error().message, 2);
    if (a->watch) {
      ops::WatchOptions w;
      w.seconds = a->seconds;
      Status s = ops::watch(*tb, *plan, w, [&](const ops::Report& report, double t) {
        if (a->json) {
          std::string j = ops::report_json(report);
          j.erase(std::remove(j.begin(), j.end(), '\n'), j.end());
          const double unix_time = unix_seconds();
          std::cout << "{\"seconds\": " << trimmed(t, 4) << ", \"unix_time\": " << std::fixed << std::setprecision(3)
                    << unix_time << std::defaultfloat << ", \"report\": " << j << "}" << std::endl;
        } else {
          std::cout << "[+" << trimmed(t, 4) << " s] " << report.failed() << " finding(s)\n"
                    << (report.failed() ? ops::report_text(report, false) : "") << std::flush;
        }
        return true;
      });
      if (!s) return fail(s.message(), 1);
      return;
    }
    Result<ops::Observation> seen = ops::collect_testbed(*tb);
    if (!seen) return fail(seen.error().message, 1);
    ops::Report report = ops::validate(*plan, *seen);
    if (a->json) std::cout << ops::report_json(report);
    else std::cout << ops::report_text(report, a->all) << "validated in " << trimmed(seconds_since(start), 3) << " s\n";
    exit_code = report.failed() ? 1 : 0;
  });
}

}  // namespace

void add_ops_commands(CLI::App& app, int& exit_code) {
  CLI::App* ops = app.add_subcommand("ops", "operations: plan a cluster, deploy it, validate what is wired and configured against the plan");
  ops->require_subcommand(1);
  add_plan(*ops, exit_code);
  add_deploy(*ops, exit_code);
  add_validate(*ops, exit_code);
  add_agent(*ops, exit_code);
  add_monitor(*ops, exit_code);
  add_controller(*ops, exit_code);
  add_locate(*ops, exit_code);
  add_undrain(*ops, exit_code);
  add_demo(*ops, exit_code);
}

}  // namespace xm::cli
