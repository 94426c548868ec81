// Launcher environments and settings: torchrun, mpirun, srun, and malformed values.
#include "ccl/settings.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <initializer_list>
#include <string>
#include <utility>

namespace xm::ccl {
namespace {

// Sets variables for one test and removes every launcher variable afterwards.
class Env {
 public:
  explicit Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    clear();
    for (auto& [k, v] : vars) setenv(k, v, 1);
  }
  ~Env() { clear(); }

 private:
  static void clear() {
    for (const char* k : {"XCCL_RANK", "XCCL_WORLD_SIZE", "XCCL_LOCAL_RANK", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                          "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
                          "SLURM_NTASKS", "SLURM_LOCALID", "MASTER_ADDR", "MASTER_PORT", "XCCL_MASTER_ADDR",
                          "XCCL_MASTER_PORT", "XCCL_SECRET", "XCCL_SECRET_FILE", "XCCL_TIMEOUT_MS", "XCCL_SHM_FIFO_BYTES",
                          "XCCL_SHM_CMA", "XCCL_CPU_SPREAD", "XCCL_RUNTIME_CONNECT", "XCCL_TCP_WINDOW_BYTES",
                          "XCCL_TCP_STRIPE_BYTES", "XCCL_TCP_SOCKETS_PER_RAIL"})
      unsetenv(k);
  }
};

const char* kSecret = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";

TEST(LaunchEnv, Torchrun) {
  Env e{{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"MASTER_ADDR", "10.0.0.5"}, {"MASTER_PORT", "29500"},
        {"XCCL_SECRET", kSecret}};
  LaunchEnv l = launch_env_from_environment().value();
  EXPECT_EQ(l.launcher, "torchrun");
  EXPECT_EQ(l.rank, 3);
  EXPECT_EQ(l.ranks, 8);
  EXPECT_EQ(l.local_rank, 1);
  EXPECT_EQ(l.master_addr, "10.0.0.5");
  EXPECT_EQ(l.master_port, 29500);
}

TEST(LaunchEnv, MpirunAndSrunWithXcclOverrides) {
  {
    Env e{{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"},
          {"XCCL_MASTER_PORT", "4000"}, {"XCCL_SECRET", kSecret}};
    LaunchEnv l = launch_env_from_environment().value();
    EXPECT_EQ(l.launcher, "mpirun");
    EXPECT_EQ(l.rank, 1);
    EXPECT_EQ(l.master_port, 4000) << "XCCL_MASTER_PORT wins (torchrun's agent holds MASTER_PORT)";
  }
  {
    Env e{{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "6"}, {"SLURM_LOCALID", "1"}, {"XCCL_MASTER_ADDR", "node1"},
          {"XCCL_MASTER_PORT", "4000"}, {"XCCL_SECRET", kSecret}};
    LaunchEnv l = launch_env_from_environment().value();
    EXPECT_EQ(l.launcher, "srun");
    EXPECT_EQ(l.rank, 5);
    EXPECT_EQ(l.master_addr, "node1");
  }
}

TEST(LaunchEnv, SaysWhatIsMissingOrWrong) {
  {
    Env e{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}};
    Result<LaunchEnv> l = launch_env_from_environment();
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().message.find("set XCCL_SECRET"), std::string::npos) << l.error().message;
  }
  {
    Env e{{"RANK", "2"}, {"WORLD_SIZE", "2"}, {"MASTER_ADDR", "h"}, {"MASTER_PORT", "1"}, {"XCCL_SECRET", kSecret}};
    Result<LaunchEnv> l = launch_env_from_environment();
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().message.find("RANK=2: expected a whole number from 0 to 1"), std::string::npos)
        << l.error().message;
  }
  {
    Env e{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"XCCL_SECRET", kSecret}};
    Result<LaunchEnv> l = launch_env_from_environment();
    ASSERT_FALSE(l.ok());
    EXPECT_NE(l.error().message.find("MASTER_ADDR and MASTER_PORT"), std::string::npos) << l.error().message;
  }
}

TEST(Settings, MalformedValuesNameTheVariable) {
  {
    Env e{{"XCCL_TIMEOUT_MS", "soon"}};
    Result<Settings> s = settings_from_environment();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("XCCL_TIMEOUT_MS=soon"), std::string::npos) << s.error().message;
  }
  {
    Env e{{"XCCL_SHM_FIFO_BYTES", "100000"}};
    Result<Settings> s = settings_from_environment();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("power of two"), std::string::npos) << s.error().message;
  }
  {
    Env e{{"XCCL_SHM_FIFO_BYTES", "2048"}};  // a power of two, but too small for a frame and a slice
    Result<Settings> s = settings_from_environment();
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.error().message.find("XCCL_SHM_FIFO_BYTES=2048"), std::string::npos) << s.error().message;
  }
  for (const char* window : {"3000000", "131072"}) {  // not a power of two; smaller than the 256 KiB stripe
    Env e{{"XCCL_TCP_WINDOW_BYTES", window}};
    Result<Settings> s = settings_from_environment();
    ASSERT_FALSE(s.ok()) << window;
    EXPECT_NE(s.error().message.find(std::string("XCCL_TCP_WINDOW_BYTES=") + window), std::string::npos) << s.error().message;
  }
  {
    Env e{{"XCCL_TCP_WINDOW_BYTES", "131072"}, {"XCCL_TCP_STRIPE_BYTES", "65536"}};
    EXPECT_EQ(settings_from_environment().value().tcp_window_bytes, 131072u);
  }
  for (const char* sockets : {"0", "17", "two"}) {
    Env e{{"XCCL_TCP_SOCKETS_PER_RAIL", sockets}};
    Result<Settings> s = settings_from_environment();
    ASSERT_FALSE(s.ok()) << sockets;
    EXPECT_NE(s.error().message.find(std::string("XCCL_TCP_SOCKETS_PER_RAIL=") + sockets), std::string::npos) << s.error().message;
  }
  {
    Env e{{"XCCL_TCP_SOCKETS_PER_RAIL", "4"}};
    EXPECT_EQ(settings_from_environment().value().tcp_sockets_per_rail, 4u);
  }
  for (const char* name : {"XCCL_SHM_CMA", "XCCL_CPU_SPREAD", "XCCL_RUNTIME_CONNECT"}) {  // switches: 0 or 1, nothing else
    Env e{{name, "yes"}};
    Result<Settings> s = settings_from_environment();
    ASSERT_FALSE(s.ok()) << name;
    EXPECT_NE(s.error().message.find(std::string(name) + "=yes"), std::string::npos) << s.error().message;
  }
  {
    Env e{{"XCCL_SHM_CMA", "0"}, {"XCCL_CPU_SPREAD", "0"}, {"XCCL_RUNTIME_CONNECT", "0"}};
    Settings s = settings_from_environment().value();
    EXPECT_FALSE(s.shm_cma);
    EXPECT_FALSE(s.cpu_spread);
    EXPECT_FALSE(s.runtime_connect);
  }
  Env e{};
  Settings defaults = settings_from_environment().value();
  EXPECT_TRUE(defaults.shm_cma);
  EXPECT_TRUE(defaults.cpu_spread);
  EXPECT_TRUE(defaults.runtime_connect);
}

}  // namespace
}  // namespace xm::ccl
