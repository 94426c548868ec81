#include "ops/agent.h"

#include <sys/resource.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "ops/exposition.h"
#include "util/clock.h"

namespace xm::ops {
namespace {

// User and system CPU time of this process, every thread.
double cpu_seconds() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) * 1e-6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

double resident_bytes() {
  std::ifstream in("/proc/self/statm");
  double size = 0, resident = 0;
  in >> size >> resident;
  return resident * double(::sysconf(_SC_PAGESIZE));
}

void counters(Exposition& e, const std::vector<LinkCounters>& links, const char* name, const char* help,
              uint64_t LinkCounters::*field) {
  e.family(name, "counter", help);
  for (const LinkCounters& l : links) e.sample({{"device", l.name}}, double(l.*field));
}

}  // namespace

Result<std::unique_ptr<Agent>> Agent::open(const FabricPlan& plan, const AgentOptions& options) {
  // A switch's agent only reads its counters: switches do not probe (their links are
  // on the hosts' probe paths).
  const Device* device = plan.find(options.host);
  Result<std::vector<ProbeTarget>> targets = std::vector<ProbeTarget>{};
  if (!device || device->role == Role::kHost) targets = probe_targets(plan, options.host, options.mesh);
  if (!targets) return targets.error();
  Result<std::unique_ptr<Prober>> prober = Prober::open(std::move(targets).value(), options.prober);
  if (!prober) return prober.error();
  Result<LinkCounterReader> links = LinkCounterReader::open();
  if (!links) return links.error();
  return std::unique_ptr<Agent>(new Agent(options.host, std::move(prober).value(), std::move(links).value()));
}

Agent::Agent(std::string host, std::unique_ptr<Prober> prober, LinkCounterReader links)
    : host_(std::move(host)), prober_(std::move(prober)), links_(std::move(links)), start_time_(unix_seconds()) {
  // A flow's labels never change: built once, not on every scrape.
  const std::vector<ProbeTarget>& targets = prober_->targets();
  for (size_t t = 0; t < targets.size(); ++t)
    for (uint32_t f = 0; f < prober_->flows_of(t); ++f) {
      const ProbeTarget& p = targets[t];
      flow_labels_.push_back(Labels{{"host", host_}, {"nic", p.src_port}, {"peer_host", p.dst_host},
                                    {"peer_nic", p.dst_port}, {"pair", p.cross_rail ? "cross-rail" : "rail"},
                                    {"flow", std::to_string(f)}});
    }
}

std::string Agent::metrics() {
  Exposition e;
  e.family("xm_agent_info", "gauge", "The agent and the host it watches.");
  e.sample({{"host", host_}}, 1);

  const ProberSnapshot s = prober_->snapshot();
  // Flows are numbered as the prober keeps them: flow_labels_[i] describes s.flows[i].
  auto per_flow = [&](const char* name, const char* type, const char* help, auto&& value) {
    e.family(name, type, help);
    for (size_t i = 0; i < s.flows.size(); ++i) e.sample(flow_labels_[i], value(s.flows[i]));
  };
  per_flow("xm_probe_sent_total", "counter", "Probes sent to the peer NIC over this flow.",
           [](const FlowStats& f) { return double(f.sent); });
  per_flow("xm_probe_received_total", "counter", "Probes the peer answered in time.",
           [](const FlowStats& f) { return double(f.received); });
  per_flow("xm_probe_lost_total", "counter", "Probes not answered within the timeout, or not sent at all.",
           [](const FlowStats& f) { return double(f.lost); });
  per_flow("xm_probe_send_errors_total", "counter", "Probes the kernel refused to send (no route, NIC down).",
           [](const FlowStats& f) { return double(f.send_errors); });
  per_flow("xm_probe_late_total", "counter", "Replies that came after their probe was counted lost.",
           [](const FlowStats& f) { return double(f.late); });
  per_flow("xm_probe_lost_in_a_row", "gauge", "The flow's latest probes lost one after another (0: its last was answered).",
           [](const FlowStats& f) { return double(f.lost_in_a_row); });
  per_flow("xm_probe_fast", "gauge", "1 while the flow is probed at the fast rate (a suspect).",
           [](const FlowStats& f) { return f.fast ? 1.0 : 0.0; });
  e.family("xm_probe_rtt_seconds", "summary", "Round-trip time of the answered probes.");
  for (size_t i = 0; i < s.flows.size(); ++i) {
    e.sample(flow_labels_[i], s.flows[i].rtt_sum_s, "_sum");
    e.sample(flow_labels_[i], double(s.flows[i].received), "_count");
  }
  e.family("xm_probe_echoed_total", "counter", "Peers' probes this host answered.");
  e.sample({{"host", host_}}, double(s.echoed));
  e.family("xm_agent_schedule_lag_seconds", "summary",
           "How late probes left against their schedule: large when the host starves the agent of CPU.");
  e.sample({{"host", host_}}, s.lag_sum_s, "_sum");
  e.sample({{"host", host_}}, double(s.lag_count), "_count");

  if (Result<std::vector<LinkCounters>> links = links_.read()) {
    const std::vector<LinkCounters>& l = *links;
    counters(e, l, "node_network_receive_bytes_total", "Bytes received.", &LinkCounters::rx_bytes);
    counters(e, l, "node_network_receive_packets_total", "Packets received.", &LinkCounters::rx_packets);
    counters(e, l, "node_network_receive_errs_total", "Receive errors.", &LinkCounters::rx_errors);
    counters(e, l, "node_network_receive_drop_total", "Received packets dropped.", &LinkCounters::rx_dropped);
    counters(e, l, "node_network_transmit_bytes_total", "Bytes sent.", &LinkCounters::tx_bytes);
    counters(e, l, "node_network_transmit_packets_total", "Packets sent.", &LinkCounters::tx_packets);
    counters(e, l, "node_network_transmit_errs_total", "Transmit errors.", &LinkCounters::tx_errors);
    counters(e, l, "node_network_transmit_drop_total", "Packets dropped on transmit.", &LinkCounters::tx_dropped);
    counters(e, l, "node_qdisc_drops_total", "Packets the root queueing discipline dropped, its queue full.",
             &LinkCounters::queue_drops);
    counters(e, l, "node_network_carrier_changes_total", "Times the link's carrier went up or down.",
             &LinkCounters::carrier_changes);
    e.family("node_network_up", "gauge", "1 when the interface's operational state is up.");
    for (const LinkCounters& c : l) e.sample({{"device", c.name}}, c.operstate == "up" ? 1 : 0);
    e.family("node_network_carrier", "gauge", "1 when the interface has carrier.");
    for (const LinkCounters& c : l) e.sample({{"device", c.name}}, c.carrier ? 1 : 0);
    e.family("node_network_mtu_bytes", "gauge", "The interface's MTU.");
    for (const LinkCounters& c : l) e.sample({{"device", c.name}}, double(c.mtu));
    e.family("node_network_flags", "gauge", "The interface's flags (IFF_UP = 1: administratively up).");
    for (const LinkCounters& c : l) e.sample({{"device", c.name}}, double(c.flags));
    e.family("node_network_speed_bytes", "gauge", "The rate the link runs at, bytes per second (its shaping).");
    for (const LinkCounters& c : l)
      if (c.speed_bps) e.sample({{"device", c.name}}, double(c.speed_bps) / 8);
  }

  e.family("process_cpu_seconds_total", "counter", "User and system CPU time the agent spent.");
  e.sample({}, cpu_seconds());
  e.family("process_resident_memory_bytes", "gauge", "The agent's resident memory.");
  e.sample({}, resident_bytes());
  e.family("process_start_time_seconds", "gauge", "When the agent started, in seconds since the epoch.");
  e.sample({}, start_time_);
  return e.text();
}

}  // namespace xm::ops
