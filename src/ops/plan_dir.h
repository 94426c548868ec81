// A plan on disk: the directory `xm ops plan` writes and everything after it reads.
//
//   DIR/spec.yaml, DIR/options.json   what the plan was made from
//   DIR/cabling.csv, topology.dot, devices.csv, addresses.csv, hosts/, switches/  (render.h)
//   DIR/inventory.sql, DIR/inventory.sqlite   the inventory (inventory.h)
//
// Writing replaces an earlier plan in DIR whole (no file of it survives that the new
// plan does not have) and refuses a DIR that holds anything else.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "util/result.h"

namespace xm::ops {

// Every text file of the plan: path relative to DIR -> contents.
std::map<std::string, std::string> plan_files(const FabricPlan& plan);

Status write_plan_dir(const FabricPlan& plan, const std::string& dir);

// Reads spec.yaml and options.json back and plans again. Errors name the file.
Result<FabricPlan> load_plan_dir(const std::string& dir);

// Re-reads every file and compares it with what the plan's spec and options give:
// each problem names the file (and line) and says what differs. Empty: the directory
// is exactly the plan.
Result<std::vector<std::string>> check_plan_dir(const std::string& dir);

// Parses cabling.csv; errors name source, line and field.
Result<std::vector<Cable>> parse_cabling_csv(std::string_view text, const std::string& source);

}  // namespace xm::ops
