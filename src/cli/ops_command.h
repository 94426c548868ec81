// `xm ops ...`: plan (deploy and validate follow).
#pragma once

#include <CLI/CLI.hpp>

namespace xm::cli {

// Registers the ops subcommands on `app`. Errors go to stderr and set `exit_code`
// (2: bad arguments or input, 1: the system said no or the check found problems).
void add_ops_commands(CLI::App& app, int& exit_code);

}  // namespace xm::cli
