// The inventory: devices, ports, cables and addresses as SQL tables (and the incidents
// the controller records and what it did about them, empty in a plan), one schema for
// SQLite (the embedded default: inventory.sqlite beside the plan) and PostgreSQL (a
// site that outgrows one file). inventory_sql() is the whole inventory as portable SQL:
// the schema, then the rows, in one transaction.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ops/fabric_plan.h"
#include "util/result.h"

struct sqlite3;

namespace xm::ops {

// CREATE TABLE statements that both SQLite and PostgreSQL accept unchanged.
std::string inventory_schema();
// The schema and every row, as one transaction.
std::string inventory_sql(const FabricPlan& plan);

// Creates (replacing) the SQLite database at `path` and runs `sql` in it.
Status write_sqlite(const std::string& path, const std::string& sql);
// Rows per table of an inventory (devices, ports, cables, addresses), from the file or
// from the plan: what `ops plan --check` compares.
using RowCounts = std::map<std::string, int64_t>;
Result<RowCounts> sqlite_row_counts(const std::string& path);
RowCounts plan_row_counts(const FabricPlan& plan);

// The incidents the controller opens and closes, in the inventory's incidents table.
struct IncidentRow {
  int64_t id = 0;
  double opened_at = 0, closed_at = 0;  // seconds since the epoch; closed 0: still open
  std::string component, fault, evidence;
  bool network = true;
};
// What the controller did about them (ops/heal.h), in the heal_actions table.
struct HealActionRow {
  double at = 0;
  int64_t incident = 0;  // 0: none (an operator's undrain of everything)
  std::string action;    // drain, advise, keep (not drained, and why), restore, undrain
  std::string component, by, reason;  // by: controller or operator
  bool ok = true;
};
class IncidentLog {
 public:
  // Opens the SQLite inventory at `path`, adding the incidents and heal_actions tables
  // to one without them.
  static Result<IncidentLog> open(const std::string& path);
  IncidentLog(IncidentLog&& other) noexcept : db_(other.db_) { other.db_ = nullptr; }
  IncidentLog& operator=(IncidentLog&&) = delete;
  ~IncidentLog();
  Result<int64_t> opened(const IncidentRow& row);  // its id
  Status updated(int64_t id, const std::string& fault, const std::string& evidence, const std::string& component);
  Status removed(int64_t id);  // folded into another
  Status closed(int64_t id, double at);
  Status acted(const HealActionRow& row);
  Result<std::vector<IncidentRow>> all();

 private:
  explicit IncidentLog(::sqlite3* db) : db_(db) {}
  ::sqlite3* db_ = nullptr;
};

// Runs `sql` on the PostgreSQL server `conninfo` names (libpq syntax, e.g.
// "host=/run/postgresql dbname=fabric"); the tables must not exist yet.
Status load_postgres(const std::string& conninfo, const std::string& sql);

}  // namespace xm::ops
