#include "cli/train_command.h"

#include <filesystem>
#include <iostream>
#include <memory>

#include "sim/train/iteration.h"
#include "util/file.h"

namespace xm::cli {

void add_train_command(CLI::App& app, int& exit_code) {
  struct Options {
    std::string job, out;
    bool quiet = false;
    double efficiency = 0, fit_seconds = 0;
  };
  auto o = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "train", "one training iteration: compute from the model, communication simulated as xccl's schedules on the fabric");
  cmd->add_option("job", o->job, "training job YAML (examples/train/)")->required();
  cmd->add_option("-o,--out", o->out, "directory for results (default: out/<job name>)");
  cmd->add_option("--efficiency", o->efficiency, "the accelerators' achieved share of peak, instead of the job's gpu.efficiency")
      ->check(CLI::Range(1e-4, 1.0));
  cmd->add_option("--fit-iteration-s", o->fit_seconds,
                  "a measured iteration time: print the efficiency that reproduces it (and use it)")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("-q,--quiet", o->quiet, "no line per simulated communication on stderr");
  cmd->callback([o, &exit_code] {
    Result<sim::train::TrainJob> job = sim::train::load_job(o->job);
    if (!job) {
      std::cerr << "xm train: " << job.error().message << "\n";
      return void(exit_code = 2);
    }
    auto log = [o](const std::string& line) {
      if (!o->quiet) std::cerr << "simulated " << line << "\n";
    };
    if (o->efficiency > 0) job->gpu.efficiency = o->efficiency;
    Result<sim::train::Iteration> it = sim::train::simulate_iteration(*job, log);
    if (!it) {
      std::cerr << "xm train: " << it.error().message << "\n";
      return void(exit_code = 2);
    }
    if (o->fit_seconds > 0) {
      Result<double> e = sim::train::fit_efficiency(*job, it->comm, o->fit_seconds);
      if (!e) {
        std::cerr << "xm train: " << e.error().message << "\n";
        return void(exit_code = 2);
      }
      job->gpu.efficiency = *e;
      it = sim::train::combine(*job, it->comm);
      std::cout << "fitted efficiency " << *e << " (an iteration of " << o->fit_seconds << " s)\n";
    }
    std::cout << sim::train::iteration_text(*job, *it);
    const std::filesystem::path dir = o->out.empty() ? "out/" + job->name : o->out;  // write_file makes it
    for (auto [file, text] : {std::pair{"iteration.json", sim::train::iteration_json(*job, *it)},
                              {"breakdown.csv", sim::train::breakdown_csv(*it)},
                              {"timeline.svg", sim::train::timeline_svg(*job, *it)}})
      if (Status s = write_file(dir / file, text); !s) {
        std::cerr << "xm train: " << s.message() << "\n";
        return void(exit_code = 2);
      }
    std::cerr << "wrote " << dir.string() << "/{iteration.json,breakdown.csv,timeline.svg}\n";
  });
}

}  // namespace xm::cli
