// The peer of bench/sim_vs_ns3.sh: stock ns-3 (3.37, Debian's libns3-dev) simulating the
// workload of an xm sim scenario, so the two simulators' wall times can be compared.
// ns-3 is the engine under the HPCC simulator and SimAI's network simulator. They add
// RDMA NICs, PFC, ECN, INT and congestion control, and forward in switch models of their
// own rather than through ns-3's IPv4 stack; none of that runs here. So this stands in
// for them optimistically as far as the model's work goes, but it measures ns-3's engine
// and packet path (Packet, PointToPoint, IPv4, UDP), not the HPCC simulator itself.
//
//   ns3_fabric <topology.txt> <flows.txt> [--mtu 1000] [--overhead 82] [--ack 84]
//              [--stop-ms 100] [--routing table|global] [--scheduler map|heap|calendar] [--seed 1]
//
// Both files are the HPCC simulator's (`xm sim hpcc-topology`, `xm sim hpcc-flows`).
// Every link is a PointToPoint link with the file's rate and delay. A flow is a UDP
// stream paced at the sender's line rate: ceil(bytes / mtu) packets, each taking as long
// on the wire as xm sim's (payload + `overhead` bytes of headers, preamble and gap),
// and the receiver answers every packet with an ACK of `ack` wire bytes, as xm sim's
// RDMA receiver does. A flow is done when its last ACK is back. There is no PFC, ECN,
// retransmission or congestion control; queues are long enough that nothing is dropped.
//
// Prints one JSON object: simulated and wall time, events, packets delivered and
// packet-hops (packets x links on their path; every path is a shortest one).
#include <ns3/core-module.h>
#include <ns3/internet-module.h>
#include <ns3/network-module.h>
#include <ns3/point-to-point-module.h>
#include <ns3/traffic-control-module.h>
#include <ns3/version.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "ns3_table_routing.h"

using namespace ns3;
using xm_bench::TableRouting;

namespace {

[[noreturn]] void die(const std::string& message) {
  std::fprintf(stderr, "ns3_fabric: %s\n", message.c_str());
  std::exit(2);
}

struct LinkSpec {
  uint32_t a = 0, b = 0;
  std::string rate, delay;
};

struct Topology {
  uint32_t nodes = 0;
  std::vector<char> is_switch;
  std::vector<LinkSpec> links;
};

Topology read_topology(const std::string& path) {
  std::ifstream in(path);
  Topology t;
  uint32_t switches = 0;
  size_t links = 0;
  if (!(in >> t.nodes >> switches >> links)) die(path + ": expected \"<nodes> <switches> <links>\"");
  t.is_switch.assign(t.nodes, 0);
  for (uint32_t i = 0, id = 0; i < switches; ++i) {
    if (!(in >> id) || id >= t.nodes) die(path + ": bad switch id");
    t.is_switch[id] = 1;
  }
  for (size_t i = 0; i < links; ++i) {
    LinkSpec l;
    std::string error_rate;
    if (!(in >> l.a >> l.b >> l.rate >> l.delay >> error_rate) || l.a >= t.nodes || l.b >= t.nodes)
      die(path + ": bad link " + std::to_string(i + 1));
    t.links.push_back(l);
  }
  return t;
}

struct FlowSpec {
  uint32_t src = 0, dst = 0;
  uint64_t bytes = 0;
  double start = 0;
};

std::vector<FlowSpec> read_flows(const std::string& path, const Topology& t) {
  std::ifstream in(path);
  size_t count = 0;
  if (!(in >> count)) die(path + ": expected the number of flows");
  std::vector<FlowSpec> flows(count);
  for (FlowSpec& f : flows) {
    uint32_t pg = 0, dport = 0;
    if (!(in >> f.src >> f.dst >> pg >> dport >> f.bytes >> f.start) || f.src >= t.nodes || f.dst >= t.nodes ||
        t.is_switch[f.src] || t.is_switch[f.dst] || f.bytes == 0)
      die(path + ": bad flow line");
  }
  return flows;
}

// Links from `to` to every node (BFS): routing tables and path lengths come from it.
std::vector<uint32_t> distances(const std::vector<std::vector<uint32_t>>& adj, uint32_t to) {
  std::vector<uint32_t> d(adj.size(), UINT32_MAX);
  std::queue<uint32_t> todo;
  d[to] = 0, todo.push(to);
  while (!todo.empty()) {
    const uint32_t u = todo.front();
    todo.pop();
    for (uint32_t v : adj[u])
      if (d[v] == UINT32_MAX) d[v] = d[u] + 1, todo.push(v);
  }
  return d;
}

struct Totals {
  uint64_t data_delivered = 0, acks_delivered = 0, send_errors = 0;
  size_t flows_done = 0, flows = 0;
  std::vector<double> fct_us;
};
Totals totals;

constexpr uint16_t kSinkPort = 100;
constexpr uint32_t kIpUdpPpp = 20 + 8 + 2;  // what ns-3 adds to a UDP payload on a PointToPoint wire

// One flow's sender: a packet every wire time at line rate, done when all are ACKed.
class Sender {
 public:
  Sender(Ptr<Node> node, Ipv4Address to, uint64_t packets, uint32_t payload, uint32_t last_payload, DataRate rate)
      : packets_(packets), payload_(payload), last_payload_(last_payload), rate_(rate) {
    socket_ = Socket::CreateSocket(node, UdpSocketFactory::GetTypeId());
    socket_->Bind();
    socket_->Connect(InetSocketAddress(to, kSinkPort));
    socket_->SetRecvCallback(MakeCallback(&Sender::on_ack, this));
  }
  void start(Time at) { Simulator::Schedule(at, &Sender::send, this), start_ = at; }

 private:
  void send() {
    const uint32_t size = sent_ + 1 == packets_ ? last_payload_ : payload_;
    if (socket_->Send(Create<Packet>(size)) < 0) ++totals.send_errors;
    if (++sent_ < packets_) Simulator::Schedule(rate_.CalculateBytesTxTime(size + kIpUdpPpp), &Sender::send, this);
  }
  void on_ack(Ptr<Socket> socket) {
    while (socket->Recv()) {
      ++totals.acks_delivered;
      if (++acked_ != packets_) continue;
      totals.fct_us.push_back((Simulator::Now() - start_).GetSeconds() * 1e6);
      if (++totals.flows_done == totals.flows) Simulator::Stop();
    }
  }

  Ptr<Socket> socket_;
  uint64_t packets_, sent_ = 0, acked_ = 0;
  uint32_t payload_, last_payload_;
  DataRate rate_;
  Time start_;
};

// Every host's receiver: one ACK back for each data packet.
class Sink {
 public:
  Sink(Ptr<Node> node, uint32_t ack_payload) : ack_payload_(ack_payload) {
    socket_ = Socket::CreateSocket(node, UdpSocketFactory::GetTypeId());
    socket_->Bind(InetSocketAddress(Ipv4Address::GetAny(), kSinkPort));
    socket_->SetRecvCallback(MakeCallback(&Sink::on_data, this));
  }

 private:
  void on_data(Ptr<Socket> socket) {
    Address from;
    while (socket->RecvFrom(from)) {
      ++totals.data_delivered;
      if (socket->SendTo(Create<Packet>(ack_payload_), 0, from) < 0) ++totals.send_errors;
    }
  }
  Ptr<Socket> socket_;
  uint32_t ack_payload_;
};

struct Options {
  std::string topology, flows, routing = "table", scheduler = "map";
  uint32_t mtu = 1000, overhead = 82, ack = 84;
  double stop_ms = 100;
  uint64_t seed = 1;
};

Options parse(int argc, char** argv) {
  Options o;
  std::vector<std::string> positional;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(a + ": needs a value");
      return argv[++i];
    };
    if (a == "--mtu")
      o.mtu = uint32_t(std::stoul(value()));
    else if (a == "--overhead")
      o.overhead = uint32_t(std::stoul(value()));
    else if (a == "--ack")
      o.ack = uint32_t(std::stoul(value()));
    else if (a == "--stop-ms")
      o.stop_ms = std::stod(value());
    else if (a == "--routing")
      o.routing = value();
    else if (a == "--seed")
      o.seed = std::stoull(value());
    else if (a == "--scheduler")
      o.scheduler = value();
    else if (a.rfind("--", 0) == 0)
      die("unknown option " + a);
    else
      positional.push_back(a);
  }
  if (positional.size() != 2) die("usage: ns3_fabric <topology.txt> <flows.txt> [options]; see the file's head");
  if (o.routing != "table" && o.routing != "global") die("--routing: table or global");
  if (o.scheduler != "map" && o.scheduler != "heap" && o.scheduler != "calendar")
    die("--scheduler: map, heap or calendar");
  if (o.overhead < kIpUdpPpp || o.ack < kIpUdpPpp + 1) die("--overhead and --ack must exceed ns-3's 30 header bytes");
  o.topology = positional[0], o.flows = positional[1];
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // xm sim counts integer picoseconds; at ns-3's default of nanoseconds a 1082-byte frame
  // at 100 Gbit/s (86.56 ns) would be rounded.
  Time::SetResolution(Time::PS);
  const Options o = parse(argc, argv);
  const auto t0 = std::chrono::steady_clock::now();
  const Topology topo = read_topology(o.topology);
  const std::vector<FlowSpec> flows = read_flows(o.flows, topo);
  RngSeedManager::SetSeed(uint32_t(o.seed));
  if (o.scheduler == "heap") GlobalValue::Bind("SchedulerType", StringValue("ns3::HeapScheduler"));
  if (o.scheduler == "calendar") GlobalValue::Bind("SchedulerType", StringValue("ns3::CalendarScheduler"));

  if (o.routing == "global") Config::SetDefault("ns3::Ipv4GlobalRouting::RandomEcmpRouting", BooleanValue(true));
  NodeContainer nodes;
  nodes.Create(topo.nodes);
  InternetStackHelper stack;
  stack.Install(nodes);

  // Queues long enough that nothing drops (xm sim's PFC fabric drops nothing either), and
  // no queue discipline above them: packets go straight to the device, ns-3's cheapest
  // path. (Without flow control Ipv4AddressHelper installs no queue disc; checked below.)
  PointToPointHelper p2p;
  p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1000000p"));
  p2p.DisableFlowControl();
  Ipv4AddressHelper addresses("10.0.0.0", "255.255.255.252");
  std::vector<std::vector<uint32_t>> adj(topo.nodes);
  struct End {
    Ptr<NetDevice> device;
    Ipv4Address peer, self;
    uint32_t peer_node;
  };
  std::vector<std::vector<End>> ends(topo.nodes);
  std::vector<Ipv4Address> address(topo.nodes);
  std::vector<DataRate> host_rate(topo.nodes);
  for (const LinkSpec& l : topo.links) {
    p2p.SetDeviceAttribute("DataRate", StringValue(l.rate));
    p2p.SetChannelAttribute("Delay", StringValue(l.delay));
    NetDeviceContainer d = p2p.Install(nodes.Get(l.a), nodes.Get(l.b));
    Ipv4InterfaceContainer ip = addresses.Assign(d);
    addresses.NewNetwork();
    for (uint32_t i = 0; i < 2; ++i)
      if (d.Get(i)->GetNode()->GetObject<TrafficControlLayer>()->GetRootQueueDiscOnDevice(d.Get(i)))
        die("a queue disc was installed");
    adj[l.a].push_back(l.b), adj[l.b].push_back(l.a);
    ends[l.a].push_back({d.Get(0), ip.GetAddress(1), ip.GetAddress(0), l.b});
    ends[l.b].push_back({d.Get(1), ip.GetAddress(0), ip.GetAddress(1), l.a});
    for (auto [node, i] : {std::pair{l.a, 0u}, {l.b, 1u}})
      if (!topo.is_switch[node]) address[node] = ip.GetAddress(i), host_rate[node] = DataRate(l.rate);
  }

  // Host ids in order, and each one's distances (routing and path lengths).
  TableRouting::HostIndex host_index;
  std::vector<uint32_t> hosts;
  for (uint32_t n = 0; n < topo.nodes; ++n)
    if (!topo.is_switch[n]) {
      if (ends[n].size() != 1) die("host " + std::to_string(n) + " must have exactly one link");
      host_index[address[n].Get()] = uint32_t(hosts.size()), hosts.push_back(n);
    }
  std::vector<std::vector<uint32_t>> dist(hosts.size());
  for (size_t h = 0; h < hosts.size(); ++h) dist[h] = distances(adj, hosts[h]);

  if (o.routing == "global") {
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();
  } else {
    for (uint32_t n = 0; n < topo.nodes; ++n) {
      auto route_via = [&](const End& e) {
        Ptr<Ipv4Route> r = Create<Ipv4Route>();
        r->SetSource(e.self), r->SetGateway(e.peer), r->SetOutputDevice(e.device);
        return r;
      };
      Ptr<Ipv4> ipv4 = nodes.Get(n)->GetObject<Ipv4>();
      if (!topo.is_switch[n]) {
        ipv4->SetRoutingProtocol(CreateObject<TableRouting>(route_via(ends[n][0])));
        continue;
      }
      std::vector<Ptr<Ipv4Route>> via;
      for (const End& e : ends[n]) via.push_back(route_via(e));
      std::vector<std::vector<Ptr<Ipv4Route>>> table(hosts.size());
      for (size_t h = 0; h < hosts.size(); ++h)
        for (size_t i = 0; i < ends[n].size(); ++i)
          if (dist[h][ends[n][i].peer_node] + 1 == dist[h][n]) table[h].push_back(via[i]);
      ipv4->SetRoutingProtocol(
          CreateObject<TableRouting>(host_index, std::move(table), o.seed * 0x9e3779b97f4a7c15ull + n));
    }
  }

  std::vector<std::unique_ptr<Sink>> sinks;
  for (uint32_t h : hosts) sinks.push_back(std::make_unique<Sink>(nodes.Get(h), o.ack - kIpUdpPpp));
  std::vector<std::unique_ptr<Sender>> senders;
  uint64_t data_packets = 0, packet_hops = 0;
  for (const FlowSpec& f : flows) {
    const uint64_t packets = (f.bytes + o.mtu - 1) / o.mtu;
    const uint32_t last = uint32_t(f.bytes - (packets - 1) * o.mtu);
    senders.push_back(std::make_unique<Sender>(nodes.Get(f.src), address[f.dst], packets,
                                               o.mtu + o.overhead - kIpUdpPpp, last + o.overhead - kIpUdpPpp,
                                               host_rate[f.src]));
    senders.back()->start(Seconds(f.start));
    data_packets += packets;
    packet_hops += packets * dist[host_index[address[f.dst].Get()]][f.src];
  }
  totals.flows = flows.size();
  Simulator::Stop(MilliSeconds(o.stop_ms));

  const auto t1 = std::chrono::steady_clock::now();
  Simulator::Run();
  const auto t2 = std::chrono::steady_clock::now();
  const double sim_s = Simulator::Now().GetSeconds();
  const uint64_t events = Simulator::GetEventCount();
  Simulator::Destroy();

  std::vector<double>& fct = totals.fct_us;
  std::sort(fct.begin(), fct.end());
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Data packets delivered x path links: every packet of a flow takes a shortest path,
  // so a flow's hops are its packets times its path length (ACKs travel the same).
  const double hops_per_packet = data_packets ? double(packet_hops) / double(data_packets) : 0;
  std::printf(
      "{\"simulator\": \"ns-3.%u\", \"build_profile\": \"%s\", \"routing\": \"%s\", \"scheduler\": \"%s\", "
      "\"nodes\": %u, \"links\": %zu, \"flows\": %zu, \"flows_done\": %zu, \"sim_ms\": %.6f, \"wall_s\": %.3f, "
      "\"setup_wall_s\": %.3f, \"events\": %llu, "
      "\"data_packets\": %llu, \"data_packets_delivered\": %llu, \"acks_delivered\": %llu, "
      "\"data_packet_hops\": %.0f, \"hops_per_packet\": %.4f, \"send_errors\": %llu, "
      "\"fct_p50_us\": %.3f, \"fct_max_us\": %.3f, \"peak_rss_mib\": %.1f}\n",
      Version::Minor(), Version::BuildProfile().c_str(), o.routing.c_str(), o.scheduler.c_str(), topo.nodes,
      topo.links.size(), flows.size(), totals.flows_done, sim_s * 1e3, std::chrono::duration<double>(t2 - t1).count(),
      std::chrono::duration<double>(t1 - t0).count(), static_cast<unsigned long long>(events),
      static_cast<unsigned long long>(data_packets), static_cast<unsigned long long>(totals.data_delivered),
      static_cast<unsigned long long>(totals.acks_delivered), double(totals.data_delivered) * hops_per_packet,
      hops_per_packet, static_cast<unsigned long long>(totals.send_errors), fct.empty() ? 0.0 : fct[fct.size() / 2],
      fct.empty() ? 0.0 : fct.back(), double(usage.ru_maxrss) / 1024);
  return totals.flows_done == totals.flows ? 0 : 1;
}
