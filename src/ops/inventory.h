// The inventory: devices, ports, cables and addresses as SQL tables, one schema for
// SQLite (the embedded default: inventory.sqlite beside the plan) and PostgreSQL (a
// site that outgrows one file). inventory_sql() is the whole inventory as portable SQL:
// the schema, then the rows, in one transaction.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ops/fabric_plan.h"
#include "util/result.h"

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

// Runs `sql` on the PostgreSQL server `conninfo` names (libpq syntax, e.g.
// "host=/run/postgresql dbname=fabric"); the tables must not exist yet.
Status load_postgres(const std::string& conninfo, const std::string& sql);

}  // namespace xm::ops
