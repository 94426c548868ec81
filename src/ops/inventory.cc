#include "ops/inventory.h"

#include <libpq-fe.h>
#include <sqlite3.h>

#include <filesystem>
#include <memory>
#include <sstream>

#include "util/format.h"

namespace xm::ops {
namespace {

std::string sql_text(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

std::string rail_or_null(uint32_t rail) { return rail == kNoRail ? "NULL" : std::to_string(rail); }

// INSERTs of up to 500 rows each: short enough for any server, few enough to be quick.
class Inserter {
 public:
  Inserter(std::ostringstream& out, std::string table) : out_(out), table_(std::move(table)) {}
  ~Inserter() { flush(); }
  void row(const std::string& values) {
    out_ << (rows_ == 0 ? "INSERT INTO " + table_ + " VALUES\n  (" : ",\n  (") << values << ')';
    if (++rows_ == 500) flush();
  }

 private:
  void flush() {
    if (rows_) out_ << ";\n";
    rows_ = 0;
  }
  std::ostringstream& out_;
  std::string table_;
  int rows_ = 0;
};

}  // namespace

std::string inventory_schema() {
  return R"(CREATE TABLE devices (
  name TEXT PRIMARY KEY,
  role TEXT NOT NULL CHECK (role IN ('host', 'tor', 'spine', 'core')),
  plane INTEGER NOT NULL,
  grp INTEGER NOT NULL,
  rail INTEGER,
  asn BIGINT,
  router_id TEXT
);
CREATE TABLE ports (
  device TEXT NOT NULL REFERENCES devices (name),
  name TEXT NOT NULL,
  rail INTEGER,
  gbps DOUBLE PRECISION NOT NULL,
  mtu INTEGER NOT NULL,
  PRIMARY KEY (device, name)
);
CREATE TABLE cables (
  id INTEGER PRIMARY KEY,
  tier TEXT NOT NULL CHECK (tier IN ('host-tor', 'tor-spine', 'spine-core')),
  rail INTEGER,
  a_device TEXT NOT NULL,
  a_port TEXT NOT NULL,
  b_device TEXT NOT NULL,
  b_port TEXT NOT NULL,
  gbps DOUBLE PRECISION NOT NULL,
  FOREIGN KEY (a_device, a_port) REFERENCES ports (device, name),
  FOREIGN KEY (b_device, b_port) REFERENCES ports (device, name),
  UNIQUE (a_device, a_port),
  UNIQUE (b_device, b_port)
);
CREATE TABLE addresses (
  device TEXT NOT NULL REFERENCES devices (name),
  interface TEXT NOT NULL,
  address TEXT NOT NULL,
  purpose TEXT NOT NULL CHECK (purpose IN ('nic', 'gateway', 'link', 'loopback')),
  PRIMARY KEY (device, interface, address)
);
CREATE TABLE incidents (
  id INTEGER PRIMARY KEY,
  opened_at DOUBLE PRECISION NOT NULL,
  closed_at DOUBLE PRECISION,
  component TEXT NOT NULL,
  fault TEXT NOT NULL,
  network INTEGER NOT NULL,
  evidence TEXT NOT NULL
);
CREATE TABLE heal_actions (
  id INTEGER PRIMARY KEY,
  at DOUBLE PRECISION NOT NULL,
  incident INTEGER,
  action TEXT NOT NULL CHECK (action IN ('drain', 'advise', 'keep', 'restore', 'undrain')),
  component TEXT NOT NULL,
  by_whom TEXT NOT NULL,
  reason TEXT NOT NULL,
  ok INTEGER NOT NULL
);
)";
}

std::string inventory_sql(const FabricPlan& plan) {
  std::ostringstream o;
  o << "BEGIN;\n" << inventory_schema();
  {
    Inserter devices(o, "devices");
    for (const Device& d : plan.devices) {
      bool sw = d.role != Role::kHost;
      devices.row(sql_text(d.name) + ", " + sql_text(to_string(d.role)) + ", " + std::to_string(d.plane) + ", " +
                  std::to_string(d.group) + ", " + rail_or_null(d.rail) + ", " +
                  (sw ? std::to_string(d.asn) : "NULL") + ", " + (sw ? sql_text(to_string(d.loopback)) : "NULL"));
    }
  }
  {
    Inserter ports(o, "ports");
    for (const Device& d : plan.devices)
      for (const Port& p : d.ports)
        ports.row(sql_text(d.name) + ", " + sql_text(p.name) + ", " + rail_or_null(p.rail) + ", " + trimmed(p.gbps, 6) +
                  ", " + std::to_string(plan.options.mtu));
  }
  {
    Inserter cables(o, "cables");
    for (const Cable& c : plan.cables)
      cables.row(std::to_string(c.id) + ", " + sql_text(tier_name(c.tier)) + ", " + rail_or_null(c.rail) + ", " +
                 sql_text(c.a.device) + ", " + sql_text(c.a.port) + ", " + sql_text(c.b.device) + ", " + sql_text(c.b.port) +
                 ", " + trimmed(c.gbps, 6));
  }
  {
    Inserter addresses(o, "addresses");
    auto add = [&](const Device& d, const std::string& interface, Prefix p, const char* purpose) {
      addresses.row(sql_text(d.name) + ", " + sql_text(interface) + ", " + sql_text(to_string(p)) + ", " + sql_text(purpose));
    };
    for (const Device& d : plan.devices) {
      if (d.role != Role::kHost) add(d, "lo", Prefix{d.loopback, 32}, "loopback");
      if (d.subnet) add(d, d.subnet->bridge, Prefix{d.subnet->gateway, d.subnet->prefix.length}, "gateway");
      for (const Port& p : d.ports)
        if (p.address) add(d, p.name, *p.address, d.role == Role::kHost ? "nic" : "link");
    }
  }
  o << "COMMIT;\n";
  return o.str();
}

Status write_sqlite(const std::string& path, const std::string& sql) {
  std::error_code ec;
  std::filesystem::remove(path, ec);
  sqlite3* raw = nullptr;
  int rc = sqlite3_open(path.c_str(), &raw);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return Error{path + ": " + sqlite3_errmsg(raw)};
  char* message = nullptr;
  if (sqlite3_exec(db.get(), "PRAGMA foreign_keys = ON;", nullptr, nullptr, &message) != SQLITE_OK ||
      sqlite3_exec(db.get(), sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
    std::string why = message ? message : "unknown error";
    sqlite3_free(message);
    return Error{path + ": " + why};
  }
  return Status::Ok();
}

Result<RowCounts> sqlite_row_counts(const std::string& path) {
  sqlite3* raw = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &raw, SQLITE_OPEN_READONLY, nullptr);
  std::unique_ptr<sqlite3, decltype(&sqlite3_close)> db(raw, &sqlite3_close);
  if (rc != SQLITE_OK) return Error{path + ": " + sqlite3_errmsg(raw)};
  RowCounts counts;
  for (const char* table : {"devices", "ports", "cables", "addresses"}) {
    std::string sql = std::string("SELECT count(*) FROM ") + table;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db.get(), sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
      return Error{path + ": " + sqlite3_errmsg(db.get())};
    std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, &sqlite3_finalize);
    if (sqlite3_step(stmt) != SQLITE_ROW) return Error{path + ": " + sqlite3_errmsg(db.get())};
    counts[table] = sqlite3_column_int64(stmt, 0);
  }
  return counts;
}

RowCounts plan_row_counts(const FabricPlan& plan) {
  RowCounts counts{{"devices", int64_t(plan.devices.size())}, {"cables", int64_t(plan.cables.size())}};
  int64_t ports = 0, addresses = 0;
  for (const Device& d : plan.devices) {
    ports += int64_t(d.ports.size());
    addresses += (d.role != Role::kHost) + bool(d.subnet);
    for (const Port& p : d.ports) addresses += bool(p.address);
  }
  counts["ports"] = ports;
  counts["addresses"] = addresses;
  return counts;
}

Status load_postgres(const std::string& conninfo, const std::string& sql) {
  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(conninfo.c_str()), &PQfinish);
  if (PQstatus(conn.get()) != CONNECTION_OK) return Error{"PostgreSQL \"" + conninfo + "\": " + PQerrorMessage(conn.get())};
  std::unique_ptr<PGresult, decltype(&PQclear)> result(PQexec(conn.get(), sql.c_str()), &PQclear);
  if (PQresultStatus(result.get()) != PGRES_COMMAND_OK) {
    std::string why = PQresultErrorMessage(result.get());
    std::unique_ptr<PGresult, decltype(&PQclear)> rollback(PQexec(conn.get(), "ROLLBACK"), &PQclear);
    return Error{"PostgreSQL \"" + conninfo + "\": " + why};
  }
  return Status::Ok();
}

}  // namespace xm::ops

namespace xm::ops {
namespace {

Status exec(sqlite3* db, const std::string& sql, const std::string& what) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) == SQLITE_OK) return Status::Ok();
  std::string why = message ? message : sqlite3_errmsg(db);
  sqlite3_free(message);
  return Error{what + ": " + why};
}

}  // namespace

Result<IncidentLog> IncidentLog::open(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open(path.c_str(), &db) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return Error{path + ": " + why};
  }
  IncidentLog log(db);
  sqlite3_busy_timeout(db, 2000);
  // A plan written before the tables existed: the same CREATE as the schema's.
  const std::string schema = inventory_schema();
  for (const std::string table : {"incidents", "heal_actions"}) {
    const std::string create = "CREATE TABLE " + table;
    const size_t at = schema.find(create + " (");
    const std::string body = schema.substr(at + create.size(), schema.find(");", at) + 2 - at - create.size());
    if (Status s = exec(db, "CREATE TABLE IF NOT EXISTS " + table + body, path); !s) return Error{s.message()};
  }
  return log;
}

IncidentLog::~IncidentLog() {
  if (db_) sqlite3_close(db_);
}

Result<int64_t> IncidentLog::opened(const IncidentRow& row) {
  sqlite3_stmt* stmt = nullptr;
  const char* sql = "INSERT INTO incidents (opened_at, closed_at, component, fault, network, evidence) VALUES (?, NULL, ?, ?, ?, ?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return Error{std::string("incidents: ") + sqlite3_errmsg(db_)};
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, &sqlite3_finalize);
  sqlite3_bind_double(stmt, 1, row.opened_at);
  sqlite3_bind_text(stmt, 2, row.component.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 3, row.fault.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt, 4, row.network ? 1 : 0);
  sqlite3_bind_text(stmt, 5, row.evidence.c_str(), -1, SQLITE_TRANSIENT);
  if (sqlite3_step(stmt) != SQLITE_DONE) return Error{std::string("incidents: ") + sqlite3_errmsg(db_)};
  return int64_t(sqlite3_last_insert_rowid(db_));
}

Status IncidentLog::removed(int64_t id) {
  return exec(db_, "DELETE FROM incidents WHERE id = " + std::to_string(id), "incidents");
}

Status IncidentLog::updated(int64_t id, const std::string& fault, const std::string& evidence, const std::string& component) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db_, "UPDATE incidents SET fault = ?, evidence = ?, component = ? WHERE id = ?", -1, &stmt, nullptr) != SQLITE_OK)
    return Error{std::string("incidents: ") + sqlite3_errmsg(db_)};
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, &sqlite3_finalize);
  sqlite3_bind_text(stmt, 1, fault.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 2, evidence.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 3, component.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(stmt, 4, id);
  if (sqlite3_step(stmt) != SQLITE_DONE) return Error{std::string("incidents: ") + sqlite3_errmsg(db_)};
  return Status::Ok();
}

Status IncidentLog::closed(int64_t id, double at) {
  return exec(db_, "UPDATE incidents SET closed_at = " + trimmed(at, 15) + " WHERE id = " + std::to_string(id), "incidents");
}

Status IncidentLog::acted(const HealActionRow& row) {
  sqlite3_stmt* stmt = nullptr;
  const char* sql = "INSERT INTO heal_actions (at, incident, action, component, by_whom, reason, ok) VALUES (?, ?, ?, ?, ?, ?, ?)";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return Error{std::string("heal_actions: ") + sqlite3_errmsg(db_)};
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, &sqlite3_finalize);
  sqlite3_bind_double(stmt, 1, row.at);
  if (row.incident) sqlite3_bind_int64(stmt, 2, row.incident);
  else sqlite3_bind_null(stmt, 2);
  sqlite3_bind_text(stmt, 3, row.action.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 4, row.component.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 5, row.by.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(stmt, 6, row.reason.c_str(), -1, SQLITE_TRANSIENT);
  sqlite3_bind_int(stmt, 7, row.ok ? 1 : 0);
  if (sqlite3_step(stmt) != SQLITE_DONE) return Error{std::string("heal_actions: ") + sqlite3_errmsg(db_)};
  return Status::Ok();
}

Result<std::vector<IncidentRow>> IncidentLog::all() {
  sqlite3_stmt* stmt = nullptr;
  const char* sql = "SELECT id, opened_at, coalesce(closed_at, 0), component, fault, network, evidence FROM incidents ORDER BY id";
  if (sqlite3_prepare_v2(db_, sql, -1, &stmt, nullptr) != SQLITE_OK) return Error{std::string("incidents: ") + sqlite3_errmsg(db_)};
  std::unique_ptr<sqlite3_stmt, decltype(&sqlite3_finalize)> guard(stmt, &sqlite3_finalize);
  std::vector<IncidentRow> out;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
    IncidentRow r;
    r.id = sqlite3_column_int64(stmt, 0);
    r.opened_at = sqlite3_column_double(stmt, 1);
    r.closed_at = sqlite3_column_double(stmt, 2);
    r.component = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 3));
    r.fault = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 4));
    r.network = sqlite3_column_int(stmt, 5) != 0;
    r.evidence = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 6));
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace xm::ops
