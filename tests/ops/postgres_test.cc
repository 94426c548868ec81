// The inventory schema on a real PostgreSQL server, started (and removed) by the test:
// the same SQL SQLite runs loads unchanged, and answers the same questions.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "common/shell.h"
#include "ops/inventory.h"
#include "ops/test_specs.h"

namespace xm::ops {
namespace {

namespace fs = std::filesystem;

// A throwaway server on a Unix socket in its own directory, run as the postgres user
// (the server refuses root). Empty bin() when Debian's postgresql is not installed.
class PostgresServer {
 public:
  PostgresServer() {
    shell::Outcome o = shell::run("ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1", false);
    if (o.exit_code != 0 || o.out.empty() || shell::run("id -u postgres").exit_code != 0) return;
    bin_ = o.out.substr(0, o.out.find('\n'));
    dir_ = fs::temp_directory_path() / ("xm-pg-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    shell::run("chown postgres:postgres " + dir_.string());
    as_postgres(bin_ + "/initdb -D " + data() + " -A trust -U postgres --no-sync -E UTF8");
    started_ = as_postgres(bin_ + "/pg_ctl -D " + data() + " -l " + dir_.string() + "/log -w -o \"-k " +
                           dir_.string() + " -c listen_addresses='' -F\" start").exit_code == 0;
  }
  ~PostgresServer() {
    if (started_) as_postgres(bin_ + "/pg_ctl -D " + data() + " -m immediate -w stop");
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  bool installed() const { return !bin_.empty(); }
  bool started() const { return started_; }
  std::string conninfo() const { return "host=" + dir_.string() + " user=postgres dbname=postgres"; }
  std::string log() const { return shell::run("cat " + dir_.string() + "/log").out; }

 private:
  std::string data() const { return dir_.string() + "/data"; }
  shell::Outcome as_postgres(const std::string& cmd) const {
    return shell::run("cd / && setpriv --reuid=postgres --regid=postgres --init-groups " + cmd);
  }
  std::string bin_;
  fs::path dir_;
  bool started_ = false;
};

int64_t count(PGconn* conn, const std::string& sql) {
  std::unique_ptr<PGresult, decltype(&PQclear)> r(PQexec(conn, sql.c_str()), &PQclear);
  EXPECT_EQ(PQresultStatus(r.get()), PGRES_TUPLES_OK) << PQresultErrorMessage(r.get());
  return PQresultStatus(r.get()) == PGRES_TUPLES_OK ? std::stoll(PQgetvalue(r.get(), 0, 0)) : -1;
}

TEST(OpsInventory, TheSameSchemaAndRowsLoadIntoARealPostgresServer) {
  ASSERT_EQ(geteuid(), 0u) << "needs root to run the server as the postgres user: run the tests as root";
  PostgresServer server;
  ASSERT_TRUE(server.installed()) << "PostgreSQL is not installed (scripts/install-deps.sh installs postgresql)";
  ASSERT_TRUE(server.started()) << server.log();
  Result<FabricPlan> plan = make_plan(ops_test::rail_spec(16, 8, 2), {});
  ASSERT_TRUE(plan.ok());
  ASSERT_TRUE(load_postgres(server.conninfo(), inventory_sql(*plan)).ok());

  std::unique_ptr<PGconn, decltype(&PQfinish)> conn(PQconnectdb(server.conninfo().c_str()), &PQfinish);
  ASSERT_EQ(PQstatus(conn.get()), CONNECTION_OK);
  RowCounts want = plan_row_counts(*plan);
  for (const auto& [table, rows] : want) EXPECT_EQ(count(conn.get(), "SELECT count(*) FROM " + table), rows) << table;
  // A question an operator asks: which cables reach rail 3's ToR, and from which hosts.
  EXPECT_EQ(count(conn.get(), "SELECT count(DISTINCT c.a_device) FROM cables c JOIN devices d ON d.name = c.b_device "
                              "WHERE d.role = 'tor' AND d.rail = 3"),
            16);
  // ASNs past 2^31 need BIGINT: they are all there, exactly.
  EXPECT_EQ(count(conn.get(), "SELECT count(*) FROM devices WHERE asn >= 4200000000"), 10);

  // Loading again fails on the existing tables, says so, and changes nothing.
  Status again = load_postgres(server.conninfo(), inventory_sql(*plan));
  ASSERT_FALSE(again.ok());
  EXPECT_NE(again.message().find("already exists"), std::string::npos) << again.message();
  EXPECT_EQ(count(conn.get(), "SELECT count(*) FROM cables"), want["cables"]);
}

TEST(OpsInventory, AnUnreachableServerIsAClearError) {
  Status s = load_postgres("host=/nonexistent-xm dbname=x connect_timeout=2", "SELECT 1");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("PostgreSQL \"host=/nonexistent-xm"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace xm::ops
