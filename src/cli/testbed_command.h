// `xm testbed ...`: up, down, status, fault, run (and the hidden probe).
#pragma once

#include <CLI/CLI.hpp>

namespace xm::cli {

// Registers the testbed subcommands on `app`. Each runs when parsed; errors go to
// stderr and set `exit_code` non-zero (2: bad arguments, 1: the system said no).
void add_testbed_commands(CLI::App& app, int& exit_code);

}  // namespace xm::cli
