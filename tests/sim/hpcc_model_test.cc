// The HPCC-compatible model: its config file, its NIC's token rounds, ACKs in the data
// class, its headroom and its standalone FCT.
#include <gtest/gtest.h>

#include "sim/network.h"
#include "sim/random.h"
#include "sim/workload/hpcc_config.h"
#include "sim/workload/hpcc_io.h"
#include "sim_fixtures.h"

namespace xm::sim {
namespace {

using test::cc;
using test::flow;

// What HPCC's run.py writes for DCQCN at 100 Gbit/s (less the output files it names).
const char* kRunPyDcqcn =
    "TOPOLOGY_FILE mix/topology.txt\n"
    "FLOW_FILE mix/flow.txt\n"
    "TRACE_FILE mix/trace.txt\n"
    "FCT_OUTPUT_FILE mix/fct.txt\n"
    "PFC_OUTPUT_FILE mix/pfc.txt\n"
    "SIMULATOR_STOP_TIME 4.00\n"
    "CC_MODE 1\n"
    "ALPHA_RESUME_INTERVAL 1\n"
    "RATE_DECREASE_INTERVAL 4\n"
    "CLAMP_TARGET_RATE 0\n"
    "RP_TIMER 300\n"
    "EWMA_GAIN 0.00390625\n"
    "FAST_RECOVERY_TIMES 1\n"
    "RATE_AI 20Mb/s\n"
    "RATE_HAI 200Mb/s\n"
    "MIN_RATE 1000Mb/s\n"
    "DCTCP_RATE_AI 1000Mb/s\n"
    "ERROR_RATE_PER_LINK 0.0000\n"
    "L2_CHUNK_SIZE 4000\n"
    "L2_ACK_INTERVAL 1\n"
    "L2_BACK_TO_ZERO 0\n"
    "HAS_WIN 0\n"
    "GLOBAL_T 1\n"
    "VAR_WIN 0\n"
    "FAST_REACT 1\n"
    "U_TARGET 0.95\n"
    "MI_THRESH 0\n"
    "INT_MULTI 1\n"
    "MULTI_RATE 0\n"
    "SAMPLE_FEEDBACK 0\n"
    "RATE_BOUND 1\n"
    "ACK_HIGH_PRIO 1\n"
    "LINK_DOWN 0 0 0\n"
    "ENABLE_TRACE 0\n"
    "KMAX_MAP 2 100000000000 1600 400000000000 6400\n"
    "KMIN_MAP 2 100000000000 400 400000000000 1600\n"
    "PMAX_MAP 2 100000000000 0.2 400000000000 0.2\n"
    "BUFFER_SIZE 32\n"
    "QLEN_MON_FILE mix/qlen.txt\n"
    "QLEN_MON_START 2000000000\n"
    "QLEN_MON_END 3000000000\n";

std::string with(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? text : text.replace(at, from.size(), to);
}

TEST(HpccConfig, RunPyDcqcnBecomesOurDcqcnWithItsParameters) {
  Result<HpccExperiment> e = parse_hpcc_config(kRunPyDcqcn, "config.txt");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->topology_file, "mix/topology.txt");
  EXPECT_EQ(e->flow_file, "mix/flow.txt");
  EXPECT_EQ(e->fct_output_file, "mix/fct.txt");
  EXPECT_EQ(e->cc,
            "dcqcn:ai_mbps=20,alpha_us=1,clamp=0,decrease_us=4,fast_recovery=1,g=0.00390625,hai_mbps=200,"
            "increase_us=300,min_rate_mbps=1000");
  EXPECT_TRUE(make_cc(e->cc, Rate::gbps(100)).ok());
  const NetConfig& c = e->network;
  EXPECT_EQ(c.model, NetModel::kHpcc);
  EXPECT_EQ(c.nic_arbitration, NicArbitration::kTokenRounds);
  EXPECT_EQ(c.header_bytes, 52u);
  EXPECT_EQ(c.wire_gap_bytes, 0u);
  EXPECT_FALSE(c.ack_high_prio);  // SimAI's switches keep ACKs with the data whatever the key says
  EXPECT_TRUE(c.nic_ack_high_prio);
  EXPECT_EQ(c.ack_every, 1u);
  EXPECT_EQ(c.mtu_payload, 1000u);
  EXPECT_DOUBLE_EQ(c.buffer_mb, 32);
  ASSERT_EQ(c.ecn_thresholds.by_rate.size(), 2u);
  EXPECT_DOUBLE_EQ(c.ecn_thresholds.by_rate[1].gbps, 400);
  EXPECT_DOUBLE_EQ(c.ecn_thresholds.by_rate[1].kmax_kb, 6400);
  EXPECT_EQ(e->stop, Time::seconds(4));
}

TEST(HpccConfig, HpccWithItsWindowAndSimaiSpellings) {
  std::string text = with(with(with(with(kRunPyDcqcn, "CC_MODE 1", "ns3::RdmaHw::CcMode 3"), "HAS_WIN 0", "HAS_WIN 1"),
                               "VAR_WIN 0", "ns3::RdmaHw::VarWin true"),
                          "ACK_HIGH_PRIO 1", "ACK_HIGH_PRIO 0");
  text += "ns3::Hpcc::TargetUtil 0.9\nns3::RdmaEgressQueue::TokenPerRound 8000\nns3::Dctcp::DctcpRateAI 1000Mb/s\n";
  Result<HpccExperiment> e = parse_hpcc_config(text, "config.txt");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->cc, "hpcc:eta=0.9,max_stage=0,min_rate_mbps=1000,w_ai_mbps=20");
  EXPECT_FALSE(e->network.nic_ack_high_prio);
  EXPECT_EQ(e->network.token_round_bytes, 8000u);
}

TEST(HpccConfig, WhatWeDoNotModelIsAnErrorOnItsLine) {
  auto error = [](const std::string& text) {
    Result<HpccExperiment> e = parse_hpcc_config(text, "config.txt");
    return e.ok() ? std::string("no error") : e.error().message;
  };
  EXPECT_EQ(error(with(kRunPyDcqcn, "CC_MODE 1", "CC_MODE 7")), "config.txt:7: CC_MODE: 7 is not modelled: 1 (DCQCN) and 3 (HPCC) are");
  EXPECT_EQ(error(with(kRunPyDcqcn, "CC_MODE 1", "CC_MODE 3")),
            "config.txt:22: HAS_WIN: HPCC is modelled with its window following its rate; use HAS_WIN 1, VAR_WIN 1");
  EXPECT_EQ(error(with(kRunPyDcqcn, "BUFFER_SIZE 32", "BUFFER_SIZE lots")), "config.txt:38: BUFFER_SIZE: expected a number, got \"lots\"");
  EXPECT_EQ(error(with(kRunPyDcqcn, "BUFFER_SIZE 32", "BUFER_SIZE 32")), "config.txt:38: BUFER_SIZE: unknown key");
  EXPECT_EQ(error(with(kRunPyDcqcn, "KMAX_MAP 2 100000000000 1600", "KMAX_MAP 2 100000000000")),
            "config.txt:35: KMAX_MAP: expected \"<n> <rate bps> <value> ...\" with n pairs, got \"2 100000000000 400000000000 6400\"");
  EXPECT_EQ(error(with(kRunPyDcqcn, "ERROR_RATE_PER_LINK 0.0000", "ERROR_RATE_PER_LINK 0.01")),
            "config.txt:18: ERROR_RATE_PER_LINK: random losses on every link are not modelled; use 0");
  EXPECT_EQ(error(with(kRunPyDcqcn, "TOPOLOGY_FILE mix/topology.txt\n", "")), "config.txt: TOPOLOGY_FILE: missing");
  EXPECT_EQ(error(std::string(kRunPyDcqcn) + "GROUP_START{\n"),
            "config.txt:42: GROUP_START{: per-node groups of settings are not read; one setting applies to every NIC");
}

TEST(HpccFiles, SimaiTopologyHeaderReadsAndWrites) {
  SimTopology t = test::dumbbell(4, 100, 400, 2);
  const std::string text = format_hpcc_topology(t, HpccDialect::kSimai);
  EXPECT_EQ(text.substr(0, text.find('\n')), "6 1 0 2 6 NIC 1");
  Result<SimTopology> back = parse_hpcc_topology(text, "t.txt");
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(format_hpcc_topology(*back), format_hpcc_topology(t));
  EXPECT_EQ(parse_hpcc_topology("6 8 2 2 6 A100 8\n4 5\n", "t.txt").error().message,
            "t.txt:1: nvswitches: NVSwitch nodes are not read from topology files; describe servers with a cluster spec");
}

NetConfig hpcc_model() {
  NetConfig c;
  apply_model(c, NetModel::kHpcc);
  return c;
}

// The time from the first to the last byte's arrival of a lone flow.
Time lone_flow_time(const NetConfig& config, uint64_t bytes) {
  auto control = cc("none");
  Network net(test::star(2), config, *control, 1);
  EXPECT_TRUE(net.add_flow(flow(0, 1, bytes)).ok());
  EXPECT_TRUE(net.run(Time::ms(10)));
  return net.flows()[0].received_at - net.flows()[0].start;
}

TEST(HpccModel, ALoneFlowStillRunsAtLineRateLessItsHeaders) {
  // Tokens come at the line rate: the bursts cost nothing when the flow is alone.
  const NetConfig c = hpcc_model();
  const uint64_t bytes = 10'000'000;
  const double gbps = double(bytes) * 8 / lone_flow_time(c, bytes).seconds_f() / 1e9;
  const double want = 100.0 * 1000 / 1052;
  EXPECT_NEAR(gbps, want, want * 0.01);
}

TEST(HpccModel, FlowsOfOneNicTakeTurnsOfARoundNotAPacket) {
  // Two flows of three full packets from one NIC, A then B at the same instant; A's first
  // packet leaves at once. Pacing then alternates packet by packet: B A B, B, so A ends
  // first, two packets before B. Token rounds make each flow wait for a whole round
  // (4000 B) of tokens: A has only one packet's worth left after its first and sends its
  // second on the served-last rule, then B, first to hold a round, sends its three in a
  // row and A its last: B ends first, a packet before A.
  const Time packet = Rate::gbps(100).tx_time(1000 + 52);
  for (NicArbitration arbitration : {NicArbitration::kPacing, NicArbitration::kTokenRounds}) {
    NetConfig c = hpcc_model();
    c.nic_arbitration = arbitration;
    auto control = cc("none");
    Network net(test::star(3), c, *control, 1);
    ASSERT_TRUE(net.add_flow(flow(0, 1, 3000)).ok());
    ASSERT_TRUE(net.add_flow(flow(0, 2, 3000)).ok());
    ASSERT_TRUE(net.run(Time::ms(1)));
    const Time a = net.flows()[0].received_at, b = net.flows()[1].received_at;
    if (arbitration == NicArbitration::kPacing) EXPECT_EQ(b - a, packet * 2);
    else EXPECT_EQ(a - b, packet);
  }
}

TEST(HpccModel, StandaloneFctIsTheHpccSimulatorsFormula) {
  // Two links of 1 us at 100 Gbit/s: base RTT 2 × 2 us + 2 payloads' serialisation, then
  // every byte with 52 B of headers per packet at 100 Gbit/s.
  const NetConfig c = hpcc_model();
  auto control = cc("none");
  Network net(test::star(2), c, *control, 1);
  ASSERT_TRUE(net.add_flow(flow(0, 1, 2500)).ok());
  const Time base = Time::us(4) + Rate::gbps(100).tx_time(1000) * 2;
  EXPECT_EQ(net.flows()[0].ideal, base + Rate::gbps(100).tx_time(2500 + 3 * 52));
  ASSERT_TRUE(net.run(Time::ms(1)));
  // Below what the flow takes alone, as there (no ACK's way back, no first-packet headers).
  EXPECT_GT(net.flows()[0].finish - net.flows()[0].start, net.flows()[0].ideal);
}

TEST(HpccModel, AcksInTheDataClassQueueBehindData) {
  // Hosts 0 and 1 each send a long flow to host 2 at line rate (no congestion control), so
  // the switch's port to host 2 queues. Host 2 sends a short flow to host 0: its data
  // crosses an idle port, its ACKs come back through the queued one. In class 0 they pass
  // the queue; in the data class they wait behind it.
  Time fct[2];
  for (bool high : {false, true}) {
    NetConfig c = hpcc_model();
    c.ack_high_prio = high;
    auto control = cc("none");
    Network net(test::star(3), c, *control, 1);
    ASSERT_TRUE(net.add_flow(flow(0, 2, 3'000'000)).ok());
    ASSERT_TRUE(net.add_flow(flow(1, 2, 3'000'000)).ok());
    ASSERT_TRUE(net.add_flow(flow(2, 0, 20'000, Time::us(50))).ok());
    ASSERT_TRUE(net.run(Time::ms(10)));
    fct[high] = net.flows()[2].finish - net.flows()[2].start;
  }
  // By 50 us the queue holds about 50 us of data: the ACKs wait about that long.
  EXPECT_GT(fct[false], fct[true] + Time::us(20));
}

TEST(HpccModel, HeadroomIsTwoBdpsAndTwoPackets) {
  NetConfig c = hpcc_model();
  EXPECT_DOUBLE_EQ(c.headroom_rtts, 2);
  EXPECT_DOUBLE_EQ(c.headroom_packets, 2);
  apply_model(c, NetModel::kXm);  // back to ours
  EXPECT_DOUBLE_EQ(c.headroom_rtts, NetConfig{}.headroom_rtts);
  EXPECT_EQ(c.header_bytes, NetConfig{}.header_bytes);
  EXPECT_EQ(c.nic_arbitration, NicArbitration::kPacing);
}

}  // namespace
}  // namespace xm::sim

namespace xm::sim {
namespace {

TEST(HpccModel, NoFlowIsLeftWaitingUnderLoad) {
  // Its NIC's wake-up rules set no wake-up while some flow holds a round of tokens: a flow
  // must still never be left with nothing to wake it. Many short and long flows from few
  // NICs, under both algorithms and several seeds.
  for (const char* algorithm : {"dcqcn", "hpcc"})
    for (uint64_t seed : {1, 2, 3}) {
      NetConfig c = hpcc_model();
      c.ack_high_prio = false;
      auto control = cc(algorithm);
      Network net(test::dumbbell(8, 100, 100, 2), c, *control, seed);
      Random rng(seed);
      for (int i = 0; i < 600; ++i) {
        const uint32_t src = uint32_t(rng.uniform() * 8), dst = (src + 1 + uint32_t(rng.uniform() * 7)) % 8;
        const uint64_t bytes = rng.uniform() < 0.8 ? 1000 + uint64_t(rng.uniform() * 9000) : 200'000;
        ASSERT_TRUE(net.add_flow(flow(src, dst, bytes, Time::us(rng.uniform() * 2000))).ok());
      }
      EXPECT_TRUE(net.run(Time::ms(500))) << algorithm << " seed " << seed << ": "
                                          << net.counters().flows_done << " of 600 flows finished";
    }
}

}  // namespace
}  // namespace xm::sim
