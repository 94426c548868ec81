// `xm ops ...`: plan, deploy, validate, agent, monitor, controller, locate, undrain, demo.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json_fwd.hpp>

#include <atomic>
#include <iostream>
#include <string>

#include "util/result.h"

namespace xm::cli {

// Registers the ops subcommands on `app`. Errors go to stderr and set `exit_code`
// (2: bad arguments or input, 1: the system said no or the check found problems).
void add_ops_commands(CLI::App& app, int& exit_code);

// What a subcommand's callback calls on an error: prints "xm ops COMMAND: why" on stderr
// and sets the exit code (`return fail(why, code);` ends the callback).
inline auto failure_reporter(const char* command, int& exit_code) {
  return [command, &exit_code](const std::string& why, int code) {
    std::cerr << "xm ops " << command << ": " << why << "\n";
    exit_code = code;
  };
}

// A daemon the monitor starts (agent, controller), once it listens on `port`: SIGTERM
// and SIGINT set `stop` from now on, and the port goes to `port_file` (if any) in one
// rename, so a reader never sees half a number. False when the file cannot be written.
bool announce_daemon(std::atomic<bool>& stop, const std::string& port_file, int port);

// `xm ops agent` and `xm ops monitor` (ops_agent_command.cc).
void add_agent(CLI::App& ops, int& exit_code);
void add_monitor(CLI::App& ops, int& exit_code);
// `xm ops controller` and `xm ops locate` (ops_controller_command.cc).
void add_controller(CLI::App& ops, int& exit_code);
void add_locate(CLI::App& ops, int& exit_code);
void add_undrain(CLI::App& ops, int& exit_code);
// `xm ops demo` (ops_demo_command.cc).
void add_demo(CLI::App& ops, int& exit_code);

// The body of the controller's answer to GET (or POST) `path`, or why there is none; port
// 0: the one `xm ops monitor` started for testbed `name`.
Result<std::string> ask_controller(const std::string& name, int port, bool post, const std::string& path);
// One incident of the controller's JSON as `xm ops locate` prints it: component, fault,
// evidence and healing, in lines a network engineer acts on.
std::string describe_incident(const nlohmann::json& incident);

}  // namespace xm::cli
