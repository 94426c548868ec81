// The HPCC simulator's files (alibaba-edu/High-Precision-Congestion-Control), so its
// experiments can be imported and its analysis scripts read our output.
//
// Topology: first line "<nodes> <switches> <links>" (or SimAI's longer header, below),
// second line the switch ids, then one
// link a line "<a> <b> <rate> <delay> <error rate>", e.g. "0 320 100Gbps 1000ns 0.000000".
// Flows: first line the number of flows, then "<src> <dst> <priority group> <dst port>
// <bytes> <start seconds>". FCT output: one finished flow a line,
// "<sip> <dip> <sport> <dport> <bytes> <start ns> <fct ns> <standalone fct ns>", addresses
// in hex as the HPCC simulator assigns them (node id n -> 11.0.0.1 + (n/256)<<16 + (n%256)<<8).
//
// Errors name the file, line and field: "flow.txt:7: size: expected a positive integer".
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "sim/flow.h"
#include "sim/topology.h"
#include "util/result.h"

namespace xm::sim {

class Network;

Result<SimTopology> parse_hpcc_topology(std::string_view text, const std::string& source);
Result<SimTopology> load_hpcc_topology(const std::string& path);

// Node ids in the file are mapped to hosts of `topology` through its external ids.
Result<std::vector<FlowSpec>> parse_hpcc_flows(std::string_view text, const std::string& source,
                                               const SimTopology& topology);
Result<std::vector<FlowSpec>> load_hpcc_flows(const std::string& path, const SimTopology& topology);

// Writers, so a topology or workload of ours can be run in the HPCC simulator. SimAI's
// fork (ns-3-alibabacloud) reads a longer header: "<nodes> <gpus per server> <nvswitches>
// <switches> <links> <gpu type> <gpus per node>"; every host is then a server of its own.
enum class HpccDialect { kHpcc, kSimai };
std::string format_hpcc_topology(const SimTopology& topology, HpccDialect dialect = HpccDialect::kHpcc);
std::string format_hpcc_flows(const std::vector<FlowSpec>& flows, const SimTopology& topology);
// Finished flows in order of completion.
std::string format_hpcc_fct(const Network& network);

uint32_t hpcc_ip(uint32_t node_id);

// "100Gbps", "25Gb/s", "400G" -> rate; "1000ns", "1us", "0.001ms" -> time.
Result<Rate> parse_rate(std::string_view text);
Result<Time> parse_duration(std::string_view text);

}  // namespace xm::sim
