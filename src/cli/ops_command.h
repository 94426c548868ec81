// `xm ops ...`: plan, deploy, validate, agent.
#pragma once

#include <CLI/CLI.hpp>

namespace xm::cli {

// Registers the ops subcommands on `app`. Errors go to stderr and set `exit_code`
// (2: bad arguments or input, 1: the system said no or the check found problems).
void add_ops_commands(CLI::App& app, int& exit_code);

// `xm ops agent` and `xm ops monitor` (ops_agent_command.cc).
void add_agent(CLI::App& ops, int& exit_code);
void add_monitor(CLI::App& ops, int& exit_code);

}  // namespace xm::cli
