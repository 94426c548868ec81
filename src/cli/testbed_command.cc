#include "cli/testbed_command.h"

#include <chrono>
#include <iostream>
#include <memory>
#include <optional>

#include "testbed/launcher.h"
#include "testbed/daemons.h"
#include "testbed/lifecycle.h"
#include "testbed/injected_faults.h"
#include "testbed/plan.h"
#include "testbed/probe.h"
#include "testbed/reach.h"
#include "testbed/state.h"
#include "testbed/status.h"
#include "testbed/system.h"
#include "testbed/units.h"
#include "topo/spec_io.h"
#include "util/format.h"

namespace xm::cli {
namespace {

using namespace xm::testbed;

// Prints "xm testbed CMD: message" and sets the exit code; returns false for chaining.
bool fail(const std::string& cmd, const std::string& message, int code, int& exit_code) {
  std::cerr << "xm testbed " << cmd << ": " << message << "\n";
  exit_code = code;
  return false;
}

void add_name_option(CLI::App* cmd, std::string& name) {
  cmd->add_option("-n,--name", name, "testbed name (1-8 of [a-z0-9]); its namespaces are xm-NAME-*")
      ->capture_default_str();
}

// Loads a running testbed's plan; prints the error (not root, bad or unknown name).
std::optional<Plan> load(const std::string& cmd, const std::string& name, int& exit_code) {
  if (Status s = check_name(name); !s) return fail(cmd, s.message(), 2, exit_code), std::nullopt;
  if (!is_root()) return fail(cmd, root_required().message, 1, exit_code), std::nullopt;
  Result<Plan> plan = load_state(name);
  if (!plan) return fail(cmd, plan.error().message, 1, exit_code), std::nullopt;
  return std::move(plan).value();
}

void add_up(CLI::App& tb, int& exit_code) {
  struct Args {
    std::string spec, name = "tb", rate, spine_rate;
    uint32_t hosts = 4, rails = 2, spines = kDefaultSpines, subnet = kDefaultSubnet, mtu = kDefaultMtu;
    bool replace = false;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = tb.add_subcommand("up", "build an emulated multi-rail cluster in network namespaces");
  auto* spec = cmd->add_option("-s,--spec", a->spec, "cluster spec (YAML or JSON): servers become hosts, NIC r sits on rail r");
  cmd->add_option("--hosts", a->hosts, "hosts, without --spec")->capture_default_str()->excludes(spec);
  cmd->add_option("--rails", a->rails, "NICs per host, NIC r on rail r, without --spec")->capture_default_str()->excludes(spec);
  add_name_option(cmd, a->name);
  cmd->add_option("--rate", a->rate,
                  "line rate of every NIC, tc units (400mbit, 1gbit); default: the spec's NIC speed scaled 1:1000, "
                  "so 400 Gbit/s becomes 400mbit");
  cmd->add_option("--spine-rate", a->spine_rate,
                  "rate of each ToR-spine link; default: the ToR's NIC rates over its uplinks (non-blocking); less "
                  "oversubscribes");
  cmd->add_option("--spines", a->spines, "spine routers, for a spec without a spine tier; every ToR has a link to each")
      ->capture_default_str();
  cmd->add_option("--subnet", a->subnet, "second octet S of the addresses 10.S.rail.host")->capture_default_str();
  cmd->add_option("--mtu", a->mtu, "MTU of every link")->capture_default_str();
  cmd->add_flag("--replace", a->replace, "remove a testbed of the same name first");
  cmd->callback([a, &exit_code] {
    const std::string c = "up";
    PlanOptions opts;
    opts.name = a->name;
    opts.subnet = a->subnet;
    opts.mtu = a->mtu;
    opts.spines = a->spines;
    if (Status s = check_name(a->name); !s) return void(fail(c, s.message(), 2, exit_code));
    if (!a->rate.empty()) {
      Result<uint64_t> r = parse_rate(a->rate);
      if (!r) return void(fail(c, "--rate: " + r.error().message, 2, exit_code));
      opts.rate_bps = *r;
    }
    if (!a->spine_rate.empty()) {
      Result<uint64_t> r = parse_rate(a->spine_rate);
      if (!r) return void(fail(c, "--spine-rate: " + r.error().message, 2, exit_code));
      opts.spine_rate_bps = *r;
    }
    topo::ClusterSpec cluster;
    std::string source;
    if (!a->spec.empty()) {
      Result<topo::ClusterSpec> loaded = topo::load_spec(a->spec);
      if (!loaded) return void(fail(c, loaded.error().message, 2, exit_code));
      cluster = std::move(loaded).value();
      source = a->spec;
    } else {
      if (a->hosts < 1 || a->hosts > kMaxHosts)
        return void(fail(c, "--hosts " + std::to_string(a->hosts) + ": expected 1 to " + std::to_string(kMaxHosts), 2,
                         exit_code));
      if (a->rails < 1 || a->rails > kMaxRail + 1)
        return void(fail(c, "--rails " + std::to_string(a->rails) + ": expected 1 to " + std::to_string(kMaxRail + 1),
                         2, exit_code));
      cluster = simple_spec(a->hosts, a->rails);
      source = "--hosts " + std::to_string(a->hosts) + " --rails " + std::to_string(a->rails);
    }
    Result<Layout> layout = make_layout(cluster, source, opts);
    if (!layout) return void(fail(c, layout.error().message, 2, exit_code));
    if (!is_root()) return void(fail(c, root_required().message, 1, exit_code));
    auto start = std::chrono::steady_clock::now();
    if (Status s = up(*layout, a->replace); !s) return void(fail(c, s.message(), 1, exit_code));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const Plan& p = layout->plan;
    size_t spines = p.switches.size() - p.rails.size();
    std::cout << "testbed " << p.name << " is up in " << trimmed(seconds, 3) << " s: " << p.hosts.size() << " hosts × "
              << p.rails.size() << " rails, " << p.rails.size() << " ToRs, " << spines << " spines; NICs at "
              << rate_string(p.hosts[0].nics[0].rate_bps) << ", ToR-spine links at " << rate_string(p.uplinks[0].rate_bps)
              << ", MTU " << p.mtu << "\n"
              << "  hosts     " << p.hosts.front().netns << (p.hosts.size() > 1 ? " … " + p.hosts.back().netns : "")
              << ", NIC r of host i at 10." << p.subnet << ".r.(i+1)/24\n"
              << "  switches  " << p.switches.front().netns << " … " << p.switches.back().netns
              << " (FRR: eBGP, ECMP, BFD; rail r's gateway 10." << p.subnet << ".r.254)\n"
              << "  plan      " << plan_dir(p.name) << " (xm ops plan --check " << plan_dir(p.name) << ")\n"
              << "next: xm testbed status --name " << p.name << " | xm testbed run --name " << p.name
              << " -- CMD | xm testbed down --name " << p.name << "\n";
  });
}

void add_down(CLI::App& tb, int& exit_code) {
  auto name = std::make_shared<std::string>("tb");
  auto all = std::make_shared<bool>(false);
  CLI::App* cmd = tb.add_subcommand("down", "remove a testbed: its namespaces, links, qdiscs and state (idempotent)");
  add_name_option(cmd, *name);
  cmd->add_flag("--all", *all, "remove every xm testbed on this machine");
  cmd->callback([=, &exit_code] {
    if (*all) {
      Result<std::vector<std::string>> r = down_all();
      if (!r) return void(fail("down", r.error().message, 1, exit_code));
      if (r->empty()) std::cout << "no testbed to remove\n";
      for (const std::string& n : *r) std::cout << "removed testbed " << n << "\n";
      return;
    }
    if (Status s = check_name(*name); !s) return void(fail("down", s.message(), 2, exit_code));
    Result<Removed> r = down(*name);
    if (!r) return void(fail("down", r.error().message, 1, exit_code));
    if (r->namespaces.empty() && !r->state_file) {
      std::cout << "no testbed " << *name << "; nothing to remove\n";
      return;
    }
    std::cout << "removed testbed " << *name << ": " << r->namespaces.size() << " namespaces";
    if (r->processes_killed) std::cout << ", " << r->processes_killed << " processes left in them killed";
    std::cout << "\n";
  });
}

void add_status(CLI::App& tb, int& exit_code) {
  auto name = std::make_shared<std::string>("tb");
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = tb.add_subcommand("status", "hosts, NICs, spine links: addresses, rates, state, byte counters");
  add_name_option(cmd, *name);
  cmd->add_flag("--json", *json, "print JSON for programs");
  cmd->callback([=, &exit_code] {
    std::optional<Plan> plan = load("status", *name, exit_code);
    if (!plan) return;
    Result<Snapshot> s = take_snapshot(*plan);
    if (!s) return void(fail("status", s.error().message, 1, exit_code));
    std::cout << (*json ? snapshot_json(*s) : snapshot_text(*s));
  });
}

void add_fault(CLI::App& tb, int& exit_code) {
  struct Args {
    std::string name = "tb", link, rate;
    std::optional<uint32_t> spine;
    bool down = false, up = false, undo = false;
    std::string miswire, inject, at, with, value;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = tb.add_subcommand(
      "fault", "cut, restore or re-rate one link; miswire or misconfigure the fabric (--miswire) or break its data plane "
               "(--inject), and undo those (--undo)");
  add_name_option(cmd, a->name);
  auto* link = cmd->add_option("--link", a->link, "a host's link: h<i>/nic<r>");
  cmd->add_option("--spine", a->spine, "every ToR-spine link of rail r's ToR")->excludes(link);
  auto* down = cmd->add_flag("--down", a->down, "cut the link (the ToR port goes down; the NIC loses carrier)");
  auto* up = cmd->add_flag("--up", a->up, "restore it")->excludes(down);
  cmd->add_option("--rate", a->rate, "new rate for both directions, tc units (200mbit)")->excludes(down)->excludes(up);
  cmd->add_option("--miswire", a->miswire,
                  "swap (--at tor1:h3-nic1 --with tor2:h5-nic2), swap-nics (--at h3/nic1 --with h3/nic2), unplug "
                  "(--at h3/nic1 or tor1:spine0), extra (--at tor1 --with tor2), wrong-switch (--at h3/nic1 --with "
                  "tor2), mtu (--at h3/nic1 --value 1500), address (--at h3/nic1 --value 10.77.1.40/24), bgp-down "
                  "(--at tor1:spine0), ecmp (--at tor1)");
  auto* inject_option = cmd->add_option(
      "--inject", a->inject,
      "loss (--at h3/nic1, tor1:h3-nic1, tor1:spine0 or spine0:tor1; --value 1%), blackhole (--at a cable end; --value "
      "50% of 5-tuples dropped on transmit), degraded (--at a cable end; --value 10% or 40mbit), flap (--at a cable "
      "end; --value seconds per cycle, 4), link-down (--at a cable end), nic-down (--at h3/nic1), switch-down (--at "
      "tor1)");
  cmd->get_option("--miswire")->excludes(inject_option);
  cmd->add_option("--at", a->at, "where the fault goes");
  cmd->add_option("--with", a->with, "the other end of a swap, extra cable or wrong switch");
  cmd->add_option("--value", a->value, "the wrong MTU or address; the loss rate, share of 5-tuples, rate or period");
  cmd->add_flag("--undo", a->undo, "undo every --miswire and --inject fault, newest first");
  cmd->callback([a, &exit_code] {
    if (Status s = check_name(a->name); !s) return void(fail("fault", s.message(), 2, exit_code));
    if (a->undo) {
      Result<size_t> n = undo_all(a->name);
      if (!n) return void(fail("fault", n.error().message, 1, exit_code));
      std::cout << a->name << ": undid " << *n << " fault(s)\n";
      return;
    }
    if (!a->miswire.empty() || !a->inject.empty()) {
      const bool miswire = !a->miswire.empty();
      Result<FaultKind> kind = parse_fault_kind(miswire ? a->miswire : a->inject);
      if (!kind) return void(fail("fault", kind.error().message, 2, exit_code));
      if (is_miswire(*kind) != miswire)
        return void(fail("fault", std::string(to_string(*kind)) + (miswire ? " is a data-plane fault: --inject " : " is a miswire: --miswire ") + to_string(*kind), 2, exit_code));
      Result<std::string> r = inject(a->name, InjectedFault{*kind, a->at, a->with, a->value});
      if (!r) return void(fail("fault", r.error().message, 1, exit_code));
      std::cout << a->name << ": " << *r << "\n";
      return;
    }
    if (a->link.empty() && !a->spine)
      return void(fail("fault", "which link? give --link h<i>/nic<r> or --spine <rail>", 2, exit_code));
    if (!a->down && !a->up && a->rate.empty())
      return void(fail("fault", "what to do? give --down, --up or --rate RATE", 2, exit_code));
    Fault f;
    f.link = a->link;
    f.spine = a->spine;
    f.action = a->down ? FaultAction::kDown : a->up ? FaultAction::kUp : FaultAction::kRate;
    if (!a->rate.empty()) {
      Result<uint64_t> r = parse_rate(a->rate);
      if (!r) return void(fail("fault", "--rate: " + r.error().message, 2, exit_code));
      f.rate_bps = *r;
    }
    if (Status s = check_name(a->name); !s) return void(fail("fault", s.message(), 2, exit_code));
    Result<std::string> r = apply_fault(a->name, f);
    if (!r) return void(fail("fault", r.error().message, 1, exit_code));
    std::cout << a->name << ": " << *r << "\n";
  });
}

void add_run(CLI::App& tb, int& exit_code) {
  auto name = std::make_shared<std::string>("tb");
  auto opts = std::make_shared<RunOptions>();
  auto rails = std::make_shared<std::string>("all");
  CLI::App* cmd = tb.add_subcommand(
      "run", "run a job: K ranks per host inside the host namespaces, with RANK, WORLD_SIZE, MASTER_ADDR, XCCL_RAILS, ...");
  add_name_option(cmd, *name);
  cmd->add_option("-k,--ranks-per-host", opts->ranks_per_host, "ranks per host")->capture_default_str()
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--rails", *rails,
                  "XCCL_RAILS: all = every NIC of the host; own = NIC (local rank mod NICs); own+spare = that NIC, "
                  "the others as spares for when it fails")
      ->check(CLI::IsMember({"all", "own", "own+spare"}))
      ->capture_default_str();
  cmd->add_option("--timeout", opts->timeout_s, "seconds before every rank is stopped (0: none)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_flag("--prefix", opts->prefix, "prefix every output line with [rank N]");
  cmd->add_option("command", opts->command, "the command of every rank, after --")->required();
  cmd->callback([=, &exit_code] {
    opts->rails = *rails == "own" ? RailMode::kOwn : *rails == "own+spare" ? RailMode::kOwnSpare : RailMode::kAll;
    std::optional<Plan> plan = load("run", *name, exit_code);
    if (!plan) return;
    Result<int> r = run_job(*plan, *opts);
    if (!r) return void(fail("run", r.error().message, 1, exit_code));
    exit_code = *r;
  });
}

void add_reach(CLI::App& tb, int& exit_code) {
  auto name = std::make_shared<std::string>("tb");
  auto timeout = std::make_shared<double>(20);
  CLI::App* cmd = tb.add_subcommand("reach", "check that every NIC reaches every NIC of every other host (TCP handshakes)");
  add_name_option(cmd, *name);
  cmd->add_option("--timeout", *timeout, "seconds for the whole check")->capture_default_str();
  cmd->callback([=, &exit_code] {
    std::optional<Plan> plan = load("reach", *name, exit_code);
    if (!plan) return;
    auto start = std::chrono::steady_clock::now();
    Result<ReachReport> r = check_reach(*plan, *timeout);
    if (!r) return void(fail("reach", r.error().message, 1, exit_code));
    double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    for (const std::string& f : r->failures) std::cout << f << "\n";
    std::cout << r->pairs - r->failures.size() << " of " << r->pairs << " NIC pairs reach each other (" << r->same_rail
              << " on one rail), " << trimmed(seconds, 3) << " s\n";
    if (!r->failures.empty()) exit_code = 1;
  });
}

void add_probe(CLI::App& tb, int& exit_code) {
  auto name = std::make_shared<std::string>("tb");
  auto flows = std::make_shared<std::vector<std::string>>();
  auto size = std::make_shared<std::string>("8M");
  auto timeout = std::make_shared<double>(30);
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = tb.add_subcommand("probe", "TCP transfers between NICs, all at once: bytes, seconds, Mbit/s");
  cmd->group("");  // hidden: a measurement helper for tests and docs
  add_name_option(cmd, *name);
  cmd->add_option("--flow", *flows, "FROM=TO, e.g. h0/nic0=h1/nic1 (repeat for concurrent flows)")->required();
  cmd->add_option("--bytes", *size, "bytes per flow (k, M, G are 1024-based)")->capture_default_str();
  cmd->add_option("--timeout", *timeout, "seconds")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_flag("--json", *json, "print JSON for programs");
  cmd->callback([=, &exit_code] {
    std::vector<FlowSpec> specs;
    for (const std::string& f : *flows) {
      size_t eq = f.find('=');
      if (eq == std::string::npos)
        return void(fail("probe", "--flow \"" + f + "\": expected FROM=TO, e.g. h0/nic0=h1/nic0", 2, exit_code));
      specs.push_back({f.substr(0, eq), f.substr(eq + 1)});
    }
    Result<uint64_t> bytes = parse_size(*size);
    if (!bytes) return void(fail("probe", "--bytes: " + bytes.error().message, 2, exit_code));
    std::optional<Plan> plan = load("probe", *name, exit_code);
    if (!plan) return;
    Result<std::vector<FlowResult>> r = probe(*plan, specs, *bytes, *timeout);
    if (!r) return void(fail("probe", r.error().message, 1, exit_code));
    std::cout << (*json ? probe_json(*r) : probe_text(*r));
  });
}

}  // namespace

void add_testbed_commands(CLI::App& app, int& exit_code) {
  CLI::App* tb = app.add_subcommand("testbed", "an emulated multi-rail cluster on this machine: up, status, fault, run, down");
  tb->require_subcommand(1);
  add_up(*tb, exit_code);
  add_down(*tb, exit_code);
  add_status(*tb, exit_code);
  add_fault(*tb, exit_code);
  add_run(*tb, exit_code);
  add_probe(*tb, exit_code);
  add_reach(*tb, exit_code);
}

}  // namespace xm::cli
