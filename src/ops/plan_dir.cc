#include "ops/plan_dir.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "ops/inventory.h"
#include "ops/render.h"
#include "topo/spec_io.h"
#include "util/file.h"

namespace xm::ops {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSpecFile = "spec.yaml";
constexpr const char* kOptionsFile = "options.json";
constexpr const char* kSqliteFile = "inventory.sqlite";
constexpr const char* kCablingHeader = "cable,tier,rail,a_device,a_port,b_device,b_port,gbps";

std::string options_json(const PlanOptions& o) {
  nlohmann::ordered_json j = {{"subnet", o.subnet},
                              {"mtu", o.mtu},
                              {"bfd_interval_ms", o.bfd_interval_ms},
                              {"pfc_priority", o.qos.pfc_priority},
                              {"dscp", o.qos.dscp}};
  return j.dump(2) + "\n";
}

Result<PlanOptions> parse_options(const std::string& text, const std::string& source) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object()) return Error{source + ": not a JSON object"};
  PlanOptions o;
  std::map<std::string, uint32_t*> fields{{"subnet", &o.subnet},
                                          {"mtu", &o.mtu},
                                          {"bfd_interval_ms", &o.bfd_interval_ms},
                                          {"pfc_priority", &o.qos.pfc_priority},
                                          {"dscp", &o.qos.dscp}};
  for (const auto& [key, value] : j.items()) {
    auto it = fields.find(key);
    if (it == fields.end()) return Error{source + ": " + key + ": unknown field"};
    if (!value.is_number_unsigned() || value.get<uint64_t>() > UINT32_MAX)
      return Error{source + ": " + key + ": expected a non-negative integer"};
    *it->second = value.get<uint32_t>();
  }
  return o;
}

// "path:line: expected `…`, found `…`" for the first line where the texts part.
std::string first_difference(const std::string& name, const std::string& want, const std::string& have) {
  std::istringstream a(want), b(have);
  std::string x, y;
  for (int line = 1;; ++line) {
    bool more_a = bool(std::getline(a, x)), more_b = bool(std::getline(b, y));
    if (!more_a && !more_b) return name + ": differs in line endings";
    if (!more_b) return name + ":" + std::to_string(line) + ": missing line `" + x + "`";
    if (!more_a) return name + ":" + std::to_string(line) + ": extra line `" + y + "`";
    if (x != y) return name + ":" + std::to_string(line) + ": expected `" + x + "`, found `" + y + "`";
  }
}

std::vector<std::string> split(std::string_view line, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= line.size(); ++i)
    if (i == line.size() || line[i] == sep) {
      out.emplace_back(line.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

bool parse_uint(std::string_view text, uint32_t& out) {
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return !text.empty() && ec == std::errc() && end == text.data() + text.size();
}

}  // namespace

std::map<std::string, std::string> plan_files(const FabricPlan& plan) {
  std::map<std::string, std::string> files{
      {kSpecFile, topo::spec_to_yaml(plan.spec)},  {kOptionsFile, options_json(plan.options)},
      {"cabling.csv", cabling_csv(plan)},           {"topology.dot", topology_dot(plan)},
      {"devices.csv", devices_csv(plan)},           {"addresses.csv", addresses_csv(plan)},
      {"inventory.sql", inventory_sql(plan)}};
  for (const Device& d : plan.devices) {
    if (d.role == Role::kHost) {
      files["hosts/" + d.name + ".sh"] = host_script(plan, d);
    } else {
      files["switches/" + d.name + "/interfaces"] = switch_interfaces(plan, d);
      files["switches/" + d.name + "/frr.conf"] = frr_conf(plan, d);
    }
  }
  return files;
}

Status write_plan_dir(const FabricPlan& plan, const std::string& dir) {
  std::error_code ec;
  const fs::path target(dir);
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) return Error{dir + ": exists and is not a directory"};
    if (!fs::is_empty(target, ec) && !fs::exists(target / kOptionsFile, ec))
      return Error{dir + ": holds files that are not a plan; choose an empty or new directory"};
  }
  // Write beside it, then swap: a failure leaves the earlier plan as it was.
  const fs::path fresh = target.string() + ".new", old = target.string() + ".old";
  fs::remove_all(fresh, ec);
  fs::remove_all(old, ec);
  for (const auto& [name, text] : plan_files(plan))
    if (Status s = write_file(fresh / name, text); !s) {
      fs::remove_all(fresh, ec);
      return s;
    }
  if (Status s = write_sqlite((fresh / kSqliteFile).string(), inventory_sql(plan)); !s) {
    fs::remove_all(fresh, ec);
    return s;
  }
  if (fs::exists(target, ec)) fs::rename(target, old, ec);
  if (ec) return Error{dir + ": cannot replace: " + ec.message()};
  fs::rename(fresh, target, ec);
  if (ec) return Error{dir + ": cannot move the new plan in place: " + ec.message()};
  fs::remove_all(old, ec);
  return Status::Ok();
}

Result<FabricPlan> load_plan_dir(const std::string& dir) {
  const fs::path root(dir);
  Result<std::string> options_text = read_file(root / kOptionsFile);
  if (!options_text) return Error{options_text.error().message + " (not a plan directory?)"};
  Result<PlanOptions> options = parse_options(*options_text, (root / kOptionsFile).string());
  if (!options) return options.error();
  Result<topo::ClusterSpec> spec = topo::load_spec((root / kSpecFile).string());
  if (!spec) return spec.error();
  Result<FabricPlan> plan = make_plan(*spec, *options);
  if (!plan) return Error{dir + ": " + plan.error().message};
  return plan;
}

Result<std::vector<std::string>> check_plan_dir(const std::string& dir) {
  Result<FabricPlan> plan = load_plan_dir(dir);
  if (!plan) return plan.error();
  const fs::path root(dir);
  std::vector<std::string> problems;
  const std::map<std::string, std::string> want = plan_files(*plan);
  for (const auto& [name, text] : want) {
    Result<std::string> have = read_file(root / name);
    if (!have) problems.push_back(name + ": missing");
    else if (*have != text) problems.push_back(first_difference(name, text, *have));
  }
  if (Result<std::string> cabling = read_file(root / "cabling.csv"); cabling)
    if (Result<std::vector<Cable>> parsed = parse_cabling_csv(*cabling, "cabling.csv"); !parsed)
      problems.push_back(parsed.error().message);
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator(); ++it) {
    if (!it->is_regular_file()) continue;
    std::string name = fs::relative(it->path(), root).string();
    if (name != kSqliteFile && !want.count(name)) problems.push_back(name + ": not part of the plan");
  }
  const std::string sqlite = (root / kSqliteFile).string();
  if (!fs::exists(sqlite, ec)) {
    problems.push_back(std::string(kSqliteFile) + ": missing");
  } else if (Result<RowCounts> counts = sqlite_row_counts(sqlite); !counts) {
    problems.push_back(counts.error().message);
  } else {
    for (const auto& [table, rows] : plan_row_counts(*plan))
      if (counts->at(table) != rows)
        problems.push_back(std::string(kSqliteFile) + ": table " + table + " has " + std::to_string(counts->at(table)) +
                           " rows, the plan " + std::to_string(rows));
  }
  return problems;
}

Result<std::vector<Cable>> parse_cabling_csv(std::string_view text, const std::string& source) {
  std::vector<Cable> cables;
  std::istringstream in{std::string(text)};
  std::string line;
  if (!std::getline(in, line) || line != kCablingHeader)
    return Error{source + ":1: expected the header `" + std::string(kCablingHeader) + "`"};
  static const char* const kFields[] = {"cable", "tier", "rail", "a_device", "a_port", "b_device", "b_port", "gbps"};
  for (int number = 2; std::getline(in, line); ++number) {
    const std::string at = source + ":" + std::to_string(number) + ": ";
    std::vector<std::string> f = split(line, ',');
    if (f.size() != 8) return Error{at + "expected 8 fields, found " + std::to_string(f.size())};
    auto bad = [&](int field, const std::string& why) { return Error{at + kFields[field] + ": " + why}; };
    Cable c;
    if (!parse_uint(f[0], c.id) || c.id != cables.size())
      return bad(0, "expected " + std::to_string(cables.size()) + " (cables are numbered in order), found `" + f[0] + "`");
    c.tier = 3;
    for (uint32_t t = 0; t < 3; ++t)
      if (f[1] == tier_name(t)) c.tier = t;
    if (c.tier == 3) return bad(1, "expected host-tor, tor-spine or spine-core, found `" + f[1] + "`");
    if (!f[2].empty() && !parse_uint(f[2], c.rail)) return bad(2, "expected a rail number or nothing, found `" + f[2] + "`");
    if (f[2].empty()) c.rail = kNoRail;
    for (int i = 3; i < 7; ++i)
      if (f[size_t(i)].empty()) return bad(i, "empty");
    c.a = {f[3], f[4]};
    c.b = {f[5], f[6]};
    char* end = nullptr;
    c.gbps = std::strtod(f[7].c_str(), &end);
    if (f[7].empty() || *end != '\0' || !(c.gbps > 0)) return bad(7, "expected a positive speed in Gbit/s, found `" + f[7] + "`");
    cables.push_back(std::move(c));
  }
  return cables;
}

}  // namespace xm::ops
