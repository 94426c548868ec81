// `xm sim ...`: run (a scenario, every algorithm, with progress on stderr) and
// hpcc-export (a cluster spec as an HPCC simulator topology file).
#pragma once

#include <CLI/CLI.hpp>

namespace xm::cli {

// Registers the sim subcommands on `app`. Each runs when parsed; errors go to stderr
// and set `exit_code` non-zero.
void add_sim_commands(CLI::App& app, int& exit_code);

}  // namespace xm::cli
