#include "ccl/settings.h"

#include <cstdlib>
#include <fstream>

#include "ccl/schedules.h"

namespace xm::ccl {
namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

Result<long long> integer(const char* name, long long lo, long long hi, long long fallback) {
  const char* v = env(name);
  if (!v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (*end || x < lo || x > hi)
    return Error{std::string(name) + "=" + v + ": expected a whole number from " + std::to_string(lo) + " to " +
                 std::to_string(hi)};
  return x;
}

}  // namespace

Result<Settings> settings_from_environment() {
  Settings s;
  auto timeout = integer("XCCL_TIMEOUT_MS", 1, 86'400'000, s.timeout.count());
  auto init = integer("XCCL_INIT_TIMEOUT_MS", 1, 86'400'000, s.init_timeout.count());
  auto chunk = integer("XCCL_CHUNK_BYTES", 256, 1ll << 30, 0);
  auto fifo = integer("XCCL_SHM_FIFO_BYTES", 0, 1ll << 30, (long long)s.shm_fifo_bytes);
  auto shm_off = integer("XCCL_SHM_DISABLE", 0, 1, 0);
  auto cma = integer("XCCL_SHM_CMA", 0, 1, 1);
  auto spread = integer("XCCL_CPU_SPREAD", 0, 1, 1);
  auto lazy = integer("XCCL_RUNTIME_CONNECT", 0, 1, 1);
  auto stripe = integer("XCCL_TCP_STRIPE_BYTES", 4096, 1ll << 30, (long long)s.tcp_stripe_bytes);
  auto window = integer("XCCL_TCP_WINDOW_BYTES", 1 << 16, 1ll << 30, (long long)s.tcp_window_bytes);
  auto sockets = integer("XCCL_TCP_SOCKETS_PER_RAIL", 1, kMaxSocketsPerRail, s.tcp_sockets_per_rail);
  auto stall = integer("XCCL_RAIL_STALL_MS", 50, 600'000, s.rail_policy.stall.count());
  auto retry = integer("XCCL_RAIL_RETRY_MS", 1, 600'000, s.rail_policy.retry.count());
  auto hold = integer("XCCL_RAIL_HOLD_MS", 0, 600'000, s.rail_policy.hold.count());
  for (auto* r : {&timeout, &init, &chunk, &fifo, &shm_off, &cma, &spread, &lazy, &stripe, &window, &sockets, &stall, &retry, &hold})
    if (!*r) return r->error();
  if ((*fifo & (*fifo - 1)) || (*fifo && *fifo < 4096))
    return Error{"XCCL_SHM_FIFO_BYTES=" + std::to_string(*fifo) + ": expected 0 (by ranks) or a power of two from 4096"};
  if ((*window & (*window - 1)) || *window < *stripe)
    return Error{"XCCL_TCP_WINDOW_BYTES=" + std::to_string(*window) + ": expected a power of two, at least XCCL_TCP_STRIPE_BYTES (" +
                 std::to_string(*stripe) + ")"};
  s.timeout = std::chrono::milliseconds(*timeout);
  s.init_timeout = std::chrono::milliseconds(*init);
  s.chunk_bytes = size_t(*chunk);
  s.shm_fifo_bytes = size_t(*fifo);
  s.shm_disable = *shm_off == 1;
  s.shm_cma = *cma == 1;
  s.cpu_spread = *spread == 1;
  s.runtime_connect = *lazy == 1;
  s.tcp_stripe_bytes = size_t(*stripe);
  s.tcp_window_bytes = size_t(*window);
  s.tcp_sockets_per_rail = uint32_t(*sockets);
  s.rail_policy = {std::chrono::milliseconds(*stall), std::chrono::milliseconds(*retry), std::chrono::milliseconds(*hold)};
  if (const char* v = env("XCCL_RAILS")) s.rails = v;
  if (const char* v = env("XCCL_RAIL_ADVICE")) s.rail_advice = v;
  if (const char* v = env("XCCL_BOOTSTRAP_ADDR")) {
    s.bootstrap_addr = v;
  } else if (Result<std::vector<Rail>> rails = parse_rails(s.rails, s.bootstrap_addr); rails && !s.rails.empty()) {
    // This host's first NIC: ranks on other hosts can reach a root there, not on loopback.
    s.bootstrap_addr = rails->front().host;
  }
  if (const char* v = env("XCCL_ALGO")) {
    if (Result<AlgorithmOverrides> o = parse_algorithm_overrides(v); !o) return o.error();
    s.algorithms = v;
  }
  return s;
}

Result<LaunchEnv> launch_env_from_environment() {
  LaunchEnv e;
  // Rank and world size, from the first launcher whose variables are present.
  struct Source {
    const char *launcher, *rank, *size, *local;
  } sources[] = {
      {"xccl", "XCCL_RANK", "XCCL_WORLD_SIZE", "XCCL_LOCAL_RANK"},
      {"torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK"},
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"},
      {"srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID"},
  };
  const Source* found = nullptr;
  for (const Source& s : sources)
    if (env(s.rank) && env(s.size)) {
      found = &s;
      break;
    }
  if (!found)
    return Error{"no launcher environment: set RANK and WORLD_SIZE (torchrun), run under mpirun or srun, or use xcclCommInitRank"};
  auto size = integer(found->size, 1, 1 << 20, 1);
  if (!size) return size.error();
  auto rank = integer(found->rank, 0, *size - 1, 0);
  if (!rank) return rank.error();
  auto local = integer(found->local, 0, *size - 1, 0);
  if (!local) return local.error();
  e.launcher = found->launcher;
  e.rank = int(*rank), e.ranks = int(*size), e.local_rank = int(*local);

  const char* addr = env("XCCL_MASTER_ADDR") ? env("XCCL_MASTER_ADDR") : env("MASTER_ADDR");
  const char* port_name = env("XCCL_MASTER_PORT") ? "XCCL_MASTER_PORT" : "MASTER_PORT";
  if (!addr || !env(port_name))
    return Error{std::string("rank ") + std::to_string(e.rank) + " (" + e.launcher +
                 "): set MASTER_ADDR and MASTER_PORT (or XCCL_MASTER_ADDR/PORT): rank 0 hosts the bootstrap there"};
  auto port = integer(port_name, 1, 65535, 0);
  if (!port) return port.error();
  e.master_addr = addr;
  e.master_port = uint16_t(*port);

  if (const char* s = env("XCCL_SECRET")) {
    e.secret_hex = s;
  } else if (const char* f = env("XCCL_SECRET_FILE")) {
    std::ifstream in(f);
    if (!(in >> e.secret_hex)) return Error{std::string("XCCL_SECRET_FILE=") + f + ": cannot read a secret"};
  } else {
    return Error{"set XCCL_SECRET (64 hex digits, e.g. from `openssl rand -hex 32`) to the same value on every rank: "
                 "every connection proves it belongs to the job with it"};
  }
  return e;
}

}  // namespace xm::ccl
