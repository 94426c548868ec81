// The HPCC simulator's experiment file (its config.txt; SimAI's ns-3-alibabacloud reads the
// same keys, and also ns3::Class::Attribute spellings of them): which topology and flows
// to run, where to write the FCTs, the congestion control and the network's settings.
// `xm sim hpcc <config>` runs it in the HPCC-compatible model (NetModel::kHpcc).
//
// Keys, one a line ("KEY value"), '#' starts a comment line:
//   files    TOPOLOGY_FILE FLOW_FILE FCT_OUTPUT_FILE (read); PFC_OUTPUT_FILE, TRACE_*,
//            *_MON_*, MON_START/END and the like (accepted, not written)
//   network  PACKET_PAYLOAD_SIZE BUFFER_SIZE (MB) ENABLE_QCN KMIN_MAP KMAX_MAP PMAX_MAP
//            ACK_HIGH_PRIO L2_ACK_INTERVAL L2_CHUNK_SIZE ns3::SwitchNode::PfcEnabled
//            ns3::RdmaEgressQueue::TokenPerRound NACKGenerationInterval
//   CC       CC_MODE (1 DCQCN, 3 HPCC) RATE_AI RATE_HAI MIN_RATE ALPHA_RESUME_INTERVAL
//            RATE_DECREASE_INTERVAL RP_TIMER EWMA_GAIN FAST_RECOVERY_TIMES CLAMP_TARGET_RATE
//            U_TARGET MI_THRESH HAS_WIN VAR_WIN FAST_REACT MULTI_RATE SAMPLE_FEEDBACK
//   run      SIMULATOR_STOP_TIME (s)
// A value we cannot model (another CC_MODE, a static PFC threshold, HPCC without its
// window, ...) is an error naming the line, not a silent difference. Keys that only tune
// what the HPCC code approximates (INT_MULTI, GLOBAL_T, PAUSE_TIME) are accepted; what
// they change is in docs/simulator.md. Keys left out take our defaults, not the HPCC
// code's attribute defaults (its run.py writes every one).
#pragma once

#include <string>
#include <string_view>

#include "sim/config.h"
#include "sim/units.h"
#include "util/result.h"

namespace xm::sim {

struct HpccExperiment {
  std::string topology_file, flow_file, fct_output_file;  // as written (relative: to the working directory)
  NetConfig network;  // NetModel::kHpcc with the file's settings
  std::string cc;     // an algorithm of ours with the file's parameters, e.g. "dcqcn:ai_mbps=20,..."
  Time stop = Time::infinite();
};

Result<HpccExperiment> parse_hpcc_config(std::string_view text, const std::string& source);
Result<HpccExperiment> load_hpcc_config(const std::string& path);

}  // namespace xm::sim
