#include "cli/topo_command.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <iostream>
#include <memory>

#include "cli/topo_report.h"
#include "topo/generate.h"
#include "topo/metrics.h"
#include "topo/spec_io.h"
#include "topo/traffic.h"

namespace xm::cli {
namespace {

constexpr const char* kDefaultSpecFile = "cluster.yaml";

// Where a command's spec comes from: --spec, else ./cluster.yaml, else the built-in one.
struct SpecChoice {
  std::string path;

  Result<topo::ClusterSpec> load(std::string& source) const {
    std::string file = path;
    if (file.empty() && std::filesystem::exists(kDefaultSpecFile)) file = kDefaultSpecFile;
    if (file.empty()) {
      source = "built-in default";
      return topo::default_spec();
    }
    source = file;
    return topo::load_spec(file);
  }
};

void add_spec_option(CLI::App* cmd, SpecChoice& choice) {
  cmd->add_option("-s,--spec", choice.path,
                  "cluster spec (YAML or JSON); default ./cluster.yaml if present, else the built-in cluster");
}

// Loads and builds; prints the error and returns nullopt on failure.
std::optional<topo::Fabric> load_fabric(const SpecChoice& choice, std::string& source) {
  Result<topo::ClusterSpec> spec = choice.load(source);
  if (!spec) {
    std::cerr << "xm: " << spec.error().message << "\n";
    return std::nullopt;
  }
  Result<topo::Fabric> fabric = topo::build_fabric(*spec);
  if (!fabric) {
    std::cerr << "xm: " << source << ": " << fabric.error().message << "\n";
    return std::nullopt;
  }
  return std::move(fabric).value();
}

void add_gen(CLI::App& topo, int& exit_code) {
  auto opts = std::make_shared<topo::GenOptions>();
  auto out = std::make_shared<std::string>(kDefaultSpecFile);
  auto kind = std::make_shared<std::string>("rail-optimized");
  CLI::App* cmd = topo.add_subcommand("gen", "write a cluster spec from a few numbers");
  cmd->add_option("--gpus", opts->gpus, "accelerators in the cluster")->capture_default_str();
  cmd->add_option("--gpus-per-server", opts->gpus_per_server, "accelerators per server")->capture_default_str();
  cmd->add_option("--rails", opts->rails, "NICs per server, NIC i on rail i")->capture_default_str();
  cmd->add_option("--nic-gbps", opts->nic_gbps, "bandwidth of one NIC, Gbit/s")->capture_default_str();
  cmd->add_option("--nic-ports", opts->nic_ports, "ports per NIC (2: dual-homed)")->capture_default_str();
  cmd->add_option("--planes", opts->planes, "independent fabric planes (NIC port p on plane p mod planes)")->capture_default_str();
  cmd->add_option("--kind", *kind, "rail-optimized or clos")
      ->check(CLI::IsMember({"rail-optimized", "clos"}))
      ->capture_default_str();
  cmd->add_option("--radix", opts->radix, "ports per switch")->capture_default_str();
  cmd->add_option("--oversubscription", opts->oversubscription, "ToR down:up bandwidth (1 = non-blocking)")
      ->capture_default_str();
  cmd->add_option("--tiers", opts->tiers, "1, 2 or 3 (default: as few as fit)");
  cmd->add_flag("--frontend", opts->frontend, "add a separate front-end network");
  cmd->add_option("--name", opts->name, "cluster name")->capture_default_str();
  cmd->add_option("-o,--output", *out, "file to write (.json for JSON; - for stdout)")->capture_default_str();
  cmd->callback([opts, out, kind, &exit_code] {
    opts->kind = *kind == "clos" ? topo::FabricKind::kClos : topo::FabricKind::kRailOptimized;
    Result<topo::ClusterSpec> spec = topo::generate(*opts);
    if (!spec) {
      std::cerr << "xm topo gen: " << spec.error().message << "\n";
      exit_code = 2;
      return;
    }
    if (Status s = topo::save_spec(*spec, *out); !s) {
      std::cerr << "xm topo gen: " << s.message() << "\n";
      exit_code = 1;
      return;
    }
    if (*out != "-") std::cerr << "wrote " << *out << "\n";
  });
}

void add_show(CLI::App& topo, int& exit_code) {
  auto choice = std::make_shared<SpecChoice>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = topo.add_subcommand("show", "summarise a cluster: servers, NICs, switches, bandwidth, ECMP");
  add_spec_option(cmd, *choice);
  cmd->add_option("spec", choice->path, "cluster spec (same as --spec)");
  cmd->add_flag("--json", *json, "print JSON for programs");
  cmd->callback([choice, json, &exit_code] {
    std::string source;
    std::optional<topo::Fabric> f = load_fabric(*choice, source);
    if (!f) return void(exit_code = 2);
    topo::Summary s = topo::summarize(*f);
    std::cout << (*json ? summary_json(s, source) : summary_text(s, source));
  });
}

void add_path(CLI::App& topo, int& exit_code) {
  auto choice = std::make_shared<SpecChoice>();
  auto ends = std::make_shared<std::vector<std::string>>();
  auto max = std::make_shared<size_t>(4);
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = topo.add_subcommand("path", "equal-cost paths between two accelerators, and why");
  add_spec_option(cmd, *choice);
  cmd->add_option("from_to", *ends, "two accelerators: srv<S>/gpu<L>, gpu<N> or <N>")->expected(2)->required();
  cmd->add_option("--max", *max, "paths to list")->capture_default_str();
  cmd->add_flag("--json", *json, "print JSON for programs");
  cmd->callback([=, &exit_code] {
    std::string source;
    std::optional<topo::Fabric> f = load_fabric(*choice, source);
    if (!f) return void(exit_code = 2);
    Result<topo::NodeId> a = f->find((*ends)[0]), b = f->find((*ends)[1]);
    for (const Result<topo::NodeId>* r : {&a, &b})
      if (!*r) {
        std::cerr << "xm topo path: " << r->error().message << "\n";
        return void(exit_code = 2);
      }
    Result<topo::PathSet> p = topo::equal_cost_paths(*f, *a, *b, *max);
    if (!p) {
      std::cerr << "xm topo path: " << p.error().message << "\n";
      return void(exit_code = 1);
    }
    std::cout << (*json ? path_json(*f, *a, *b, *p) : path_text(*f, *a, *b, *p));
  });
}

void add_dot(CLI::App& topo, int& exit_code) {
  auto choice = std::make_shared<SpecChoice>();
  auto limit = std::make_shared<size_t>(2000);
  CLI::App* cmd = topo.add_subcommand("dot", "the fabric as a Graphviz graph (small fabrics)");
  add_spec_option(cmd, *choice);
  cmd->add_option("spec", choice->path, "cluster spec (same as --spec)");
  cmd->add_option("--max-nodes", *limit, "refuse fabrics with more nodes than this")->capture_default_str();
  cmd->callback([=, &exit_code] {
    std::string source;
    std::optional<topo::Fabric> f = load_fabric(*choice, source);
    if (!f) return void(exit_code = 2);
    if (f->node_count() > *limit) {
      std::cerr << "xm topo dot: " << source << " has " << f->node_count() << " nodes, more than --max-nodes "
                << *limit << "; Graphviz would not draw it legibly\n";
      return void(exit_code = 2);
    }
    std::cout << fabric_dot(*f);
  });
}

void add_traffic(CLI::App& topo, int& exit_code) {
  auto choice = std::make_shared<SpecChoice>();
  auto pattern = std::make_shared<std::string>();
  auto matrix = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = topo.add_subcommand("traffic", "how much of a traffic matrix stays inside a server or a rail");
  add_spec_option(cmd, *choice);
  auto* p = cmd->add_option("--pattern", *pattern, "ring, rail-rings or all-to-all");
  auto* m = cmd->add_option("--matrix", *matrix, "CSV of src,dst,bytes (accelerator names or indices)");
  p->excludes(m);
  cmd->add_flag("--json", *json, "print JSON for programs");
  cmd->callback([=, &exit_code] {
    if (pattern->empty() == matrix->empty()) {
      std::cerr << "xm topo traffic: give one of --pattern or --matrix\n";
      return void(exit_code = 2);
    }
    std::string source;
    std::optional<topo::Fabric> f = load_fabric(*choice, source);
    if (!f) return void(exit_code = 2);
    Result<std::vector<topo::Demand>> demands = Error{""};
    if (!pattern->empty()) {
      Result<topo::Pattern> kind = topo::parse_pattern(*pattern);
      demands = kind ? topo::pattern_demands(*f, *kind) : Result<std::vector<topo::Demand>>(kind.error());
    } else {
      std::ifstream in(*matrix, std::ios::binary);
      std::stringstream text;
      text << in.rdbuf();
      demands = in ? topo::parse_traffic_csv(*f, text.str(), *matrix)
                   : Result<std::vector<topo::Demand>>(Error{*matrix + ": cannot open the traffic matrix"});
    }
    if (!demands) {
      std::cerr << "xm topo traffic: " << demands.error().message << "\n";
      return void(exit_code = 2);
    }
    topo::TrafficShare share = topo::classify_traffic(*f, *demands);
    std::string what = pattern->empty() ? *matrix : *pattern;
    std::cout << (*json ? traffic_json(share, what, demands->size()) : traffic_text(share, what, source, demands->size()));
  });
}

}  // namespace

void add_topo_commands(CLI::App& app, int& exit_code) {
  CLI::App* topo = app.add_subcommand("topo", "the cluster topology model: gen, show, path, dot, traffic");
  topo->require_subcommand(1);
  add_gen(*topo, exit_code);
  add_show(*topo, exit_code);
  add_path(*topo, exit_code);
  add_dot(*topo, exit_code);
  add_traffic(*topo, exit_code);
}

int print_default_summary() {
  Result<topo::Fabric> f = topo::build_fabric(topo::default_spec());
  if (!f) {
    std::cerr << "xm: " << f.error().message << "\n";
    return 1;
  }
  std::cout << summary_text(topo::summarize(*f), "built-in default");
  return 0;
}

}  // namespace xm::cli
