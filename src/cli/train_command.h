// `xm train JOB`: one training iteration of a job (sim/train/), its communication
// simulated on the job's fabric; a summary on stdout, files in --out.
#pragma once

#include <CLI/CLI.hpp>

namespace xm::cli {

void add_train_command(CLI::App& app, int& exit_code);

}  // namespace xm::cli
