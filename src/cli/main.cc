// xm: the xingmai command line. Thin: parses, then calls the libraries.
#include <CLI/CLI.hpp>

#include "cli/ops_command.h"
#include "cli/sim_command.h"
#include "cli/testbed_command.h"
#include "cli/train_command.h"
#include "cli/topo_command.h"

int main(int argc, char** argv) {
  CLI::App app{"xm: xingmai, an AI-cluster network stack (topology, collectives, simulation, operations)"};
  app.set_version_flag("--version", "xm 0.1.0");
  int exit_code = 0;
  xm::cli::add_topo_commands(app, exit_code);
  xm::cli::add_sim_commands(app, exit_code);
  xm::cli::add_train_command(app, exit_code);
  xm::cli::add_testbed_commands(app, exit_code);
  xm::cli::add_ops_commands(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (app.get_subcommands().empty()) return xm::cli::print_default_summary();
  return exit_code;
}
