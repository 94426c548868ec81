// `xm topo ...`: gen, show, path, dot.
#pragma once

#include <CLI/CLI.hpp>

namespace xm::cli {

// Registers the topo subcommands on `app`. Each runs when parsed; errors go to stderr
// and set `exit_code` non-zero.
void add_topo_commands(CLI::App& app, int& exit_code);

// The main job until the collective library exists: the built-in cluster's summary.
int print_default_summary();

}  // namespace xm::cli
