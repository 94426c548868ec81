#include "cli/ops_command.h"

#include <chrono>
#include <iostream>
#include <memory>

#include "ops/inventory.h"
#include "ops/plan_dir.h"
#include "topo/spec_io.h"
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

}  // namespace

void add_ops_commands(CLI::App& app, int& exit_code) {
  CLI::App* ops = app.add_subcommand("ops", "operations: plan a cluster's cabling, addresses and configuration");
  ops->require_subcommand(1);
  add_plan(*ops, exit_code);
}

}  // namespace xm::cli
