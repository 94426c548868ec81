// `xm ops monitor` on a real testbed — FRR routers, veth cables, an agent in every host
// and switch namespace, Debian's Prometheus scraping them, the controller reading it —
// read back through Prometheus's HTTP API and `xm ops locate`: every agent is scraped, a
// healthy fabric loses no probe and raises no incident, injected faults are named by
// component and class, a cut cable shows as loss on exactly the flows through it and as
// a carrier change on its NIC, the dashboard draws an injected fault on its cable in a
// real headless Chromium, a controller that cannot read Prometheus calls its incidents
// stale, and stopping the monitor stops every process it started.
// Needs root.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <thread>

#include "common/shell.h"

namespace {

using nlohmann::json;

shell::Outcome xm(const std::string& args) { return shell::run("'" XM_BINARY "' " + args, true); }

class MonitorLive : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (::geteuid() != 0) return;
    name_ = "om" + std::to_string(::getpid() % 100000);
    spec_ = "/tmp/xm-monitor-live-" + std::to_string(::getpid()) + ".yaml";
    std::ofstream(spec_) << "name: live\nservers: 4\nserver:\n  accelerators: 2\n  nics: 2\n  nic_gbps: 100\n"
                            "fabric:\n  kind: rail-optimized\n  tor: {ports: 8, servers: 4}\n";
    xm("testbed down --name " + name_);
    shell::Outcome d = xm("ops deploy " + spec_ + " --name " + name_);
    output_ = d.out;
    if (d.exit_code != 0) return;
    shell::Outcome m = xm("ops monitor --name " + name_ + " --interval 0.2");
    output_ += m.out;
    if (m.exit_code != 0) return;
    std::ifstream port("/run/xm-testbed/" + name_ + "/monitor/prometheus.port");
    port >> prometheus_port_;
    started_ = prometheus_port_ > 0;
  }
  static void TearDownTestSuite() {
    if (!name_.empty()) xm("testbed down --name " + name_);
    std::remove(spec_.c_str());
  }
  void SetUp() override {
    ASSERT_EQ(::geteuid(), 0u) << "the live monitor tests need root (network namespaces, FRR): run them as root";
    ASSERT_TRUE(started_) << output_;
  }

  // An instant query: the result vector as (labels, value).
  static std::vector<std::pair<json, double>> query(const std::string& promql) {
    httplib::Client c("127.0.0.1", prometheus_port_);
    auto r = c.Get("/api/v1/query", httplib::Params{{"query", promql}}, httplib::Headers{});
    std::vector<std::pair<json, double>> out;
    EXPECT_TRUE(r && r->status == 200) << promql << ": " << (r ? r->body : "no answer");
    if (!r || r->status != 200) return out;
    json j = json::parse(r->body);
    for (const json& s : j["data"]["result"]) out.emplace_back(s["metric"], std::stod(s["value"][1].get<std::string>()));
    return out;
  }
  static double scalar(const std::string& promql) {
    auto v = query(promql);
    return v.empty() ? 0 : v.front().second;
  }
  // Waits up to `seconds` for `promql` to return a value satisfying `ok`.
  template <typename Ok>
  static bool eventually(const std::string& promql, Ok ok, double seconds) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    for (;;) {
      if (ok(scalar(promql))) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
    }
  }

  static inline std::string name_, spec_, output_;
  static inline int prometheus_port_ = 0;
  static inline bool started_ = false;
};

TEST_F(MonitorLive, PrometheusScrapesEveryAgentAndItsMetricsPassPromtool) {
  auto up = query("up{job=\"xm-agent\"}");
  ASSERT_EQ(up.size(), 8u);  // 4 hosts, 2 ToRs, 2 spines
  for (const auto& [labels, value] : up) EXPECT_EQ(value, 1) << labels.dump();
  // Every host's NICs by node_exporter's names.
  EXPECT_EQ(query("node_network_up{job=\"xm-agent\",device=~\"nic.*\"} == 1").size(), 8u);
  // A switch's agent counts its ports (4 host ports and 2 uplinks on a ToR), shaped at
  // the cables' rate.
  EXPECT_EQ(query("node_network_up{job=\"xm-agent\",host=\"tor1\",device=~\"h.*|spine.*\"} == 1").size(), 6u);
  EXPECT_EQ(query("node_network_speed_bytes{host=\"spine0\"} > 0").size(), 2u);
  // What one agent serves, checked by Prometheus's own linter.
  auto targets = query("up{job=\"xm-agent\",host=\"h2\"}");
  ASSERT_EQ(targets.size(), 1u);
  const std::string instance = targets[0].first["instance"];
  const size_t colon = instance.rfind(':');
  httplib::Client agent(instance.substr(0, colon), std::stoi(instance.substr(colon + 1)));
  auto r = agent.Get("/metrics");
  ASSERT_TRUE(r && r->status == 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string path = "/tmp/xm-monitor-live-" + std::to_string(::getpid()) + ".txt";
  std::ofstream(path) << r->body;
  shell::Outcome lint = shell::run("promtool check metrics < " + path, true);
  std::remove(path.c_str());
  EXPECT_EQ(lint.exit_code, 0) << lint.out;
  EXPECT_EQ(agent.Get("/nothing")->status, 404);
}

TEST_F(MonitorLive, AHealthyFabricLosesNoProbe) {
  // Every flow answered: 3 rail peers x 2 NICs + 2 x 2 cross-rail peers x at least 4 flows
  // per host (the agents' budget buys more on a fabric this small).
  const double flows = scalar("count(xm_probe_sent_total)");
  EXPECT_GE(flows, 4 * (6 + 16));
  ASSERT_TRUE(eventually("count(increase(xm_probe_received_total[3s]) > 0)", [&](double v) { return v == flows; }, 10))
      << scalar("count(increase(xm_probe_received_total[3s]) > 0)") << " of " << flows;
  // (agents started one after another: a probe to one not yet up was lost; not since)
  EXPECT_TRUE(eventually("sum(increase(xm_probe_lost_total[4s]))", [](double v) { return v == 0; }, 10))
      << query("increase(xm_probe_lost_total[4s]) > 0").size() << " flows lost probes";
  double rtt = scalar("sum(rate(xm_probe_rtt_seconds_sum[5s])) / sum(rate(xm_probe_rtt_seconds_count[5s]))");
  EXPECT_GT(rtt, 0);
  EXPECT_LT(rtt, 0.01);
}

// The port `xm ops monitor` started testbed NAME's controller on.
int controller_port(const std::string& name) {
  std::ifstream port_file("/run/xm-testbed/" + name + "/monitor/controller.port");
  int port = 0;
  port_file >> port;
  return port;
}

// What the controller serves at `path`.
std::string controller(const std::string& name, const std::string& path) {
  httplib::Client c("127.0.0.1", controller_port(name));
  auto r = c.Get(path);
  return r && r->status == 200 ? r->body : "";
}

// FRR's BGP sessions on `device`, as vtysh prints them.
std::string bgp_summary(const std::string& name, const std::string& device) {
  return shell::run("vtysh --vty_socket /run/xm-testbed/" + name + "/" + device +
                        " -c 'show bgp summary'",
                    true)
      .out;
}

// The open incidents `xm ops locate --json` lists.
std::vector<json> open_incidents(const std::string& name) {
  shell::Outcome o = xm("ops locate --json --name " + name);
  json j = json::parse(o.out, nullptr, false);
  std::vector<json> out;
  if (j.is_discarded() || !j.contains("incidents")) return out;
  for (const json& i : j["incidents"])
    if (i["closed_at"].is_null()) out.push_back(i);
  return out;
}

// Waits up to `seconds` for an open incident of class `fault` on a component naming
// `component`; the incident, or null.
json located(const std::string& name, const std::string& component, const std::string& fault, double seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    for (const json& i : open_incidents(name))
      if ((fault.empty() || i["fault"] == fault) && i["component"].get<std::string>().find(component) != std::string::npos) return i;
    if (std::chrono::steady_clock::now() > deadline) return nullptr;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
}

TEST_F(MonitorLive, LocateNamesEachInjectedFaultAndNothingElse) {
  shell::Outcome clean = xm("ops locate --name " + name_);
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_NE(clean.out.find("no incidents"), std::string::npos) << clean.out;

  // Half the 5-tuples through spine1's port to tor1 dropped, BGP untouched. (With two
  // ToRs the probes through spine1 cross both its cables: either may be named.)
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --inject blackhole --at spine1:tor1 --value 50%").exit_code, 0);
  json hole = located(name_, "spine1:tor1", "blackhole", 15);
  EXPECT_FALSE(hole.is_null()) << xm("ops locate --all --name " + name_).out;
  // Healed: drained by the evaluation that located it (the first seconds of a black hole
  // look like loss; either drains), its sessions shut at spine1 and at the ToRs. The
  // incident is published before its drain's vtysh commands finish: allow them 5 s.
  json drained;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);;) {
    drained = json::parse(controller(name_, "/api/actions"), nullptr, false);
    ASSERT_TRUE(drained.is_object());
    if (!drained["drained"].empty() || std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(drained["drained"].empty()) << drained.dump(1);
  EXPECT_NE(drained["drained"].dump().find("spine1:tor1"), std::string::npos) << drained.dump(1);
  EXPECT_EQ(drained["actions"][0]["action"], "drain");
  EXPECT_NE(bgp_summary(name_, "spine1").find("Idle (Admin)"), std::string::npos) << bgp_summary(name_, "spine1");
  EXPECT_NE(xm("ops locate --name " + name_).out.find("s after it was located: drained"), std::string::npos);
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --undo").exit_code, 0);
  // Undone by the operator: the sessions come back up.
  shell::Outcome undrain = xm("ops undrain --all --name " + name_);
  const auto undrained = std::chrono::steady_clock::now();
  EXPECT_EQ(undrain.exit_code, 0) << undrain.out;
  EXPECT_NE(undrain.out.find("restored tor1:spine1 - spine1:tor1"), std::string::npos) << undrain.out;
  EXPECT_EQ(xm("ops undrain --all --name " + name_).exit_code, 1);  // nothing left
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (bgp_summary(name_, "spine1").find("Idle") != std::string::npos && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  EXPECT_EQ(bgp_summary(name_, "spine1").find("Idle"), std::string::npos) << bgp_summary(name_, "spine1");

  // A fault right after the undrain, on the other spine: the flows the reopened session
  // moves (every flow through tor1's uplinks) are no evidence while routing settles, 5 s,
  // and are again from then on, not only once the 10 s window has slid past the undrain.
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --inject blackhole --at spine0:tor1 --value 50%").exit_code, 0);
  const double since_undrain = std::chrono::duration<double>(std::chrono::steady_clock::now() - undrained).count();
  json next = located(name_, "spine0:tor1", "", 14 - since_undrain);
  EXPECT_FALSE(next.is_null()) << "not within 14 s of the undrain\n" << xm("ops locate --all --name " + name_).out;
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --undo").exit_code, 0);
  xm("ops undrain --all --name " + name_);

  ASSERT_EQ(xm("testbed fault --name " + name_ + " --inject nic-down --at h2/nic1").exit_code, 0);
  json nic = located(name_, "h2/nic1", "nic-down", 10);
  ASSERT_FALSE(nic.is_null()) << xm("ops locate --all --name " + name_).out;
  EXPECT_EQ(nic["component"], "h2/nic1");
  shell::Outcome words = xm("ops locate --name " + name_);
  EXPECT_EQ(words.exit_code, 1) << words.out;
  EXPECT_NE(words.out.find("h2/nic1 is administratively down"), std::string::npos) << words.out;
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --undo").exit_code, 0);

  // Nothing else was blamed; and every incident is in the inventory database.
  const json all = json::parse(xm("ops locate --json --all --name " + name_).out);
  for (const json& i : all["incidents"]) {
    const std::string c = i["component"];
    EXPECT_TRUE(c == "h2/nic1" || c.find("spine1:tor") != std::string::npos || c.find("spine0:tor") != std::string::npos)
        << i.dump();
  }
  const std::string count =
      R"py(python3 -c 'import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute()py"
      R"py("select count(distinct component) from incidents").fetchone()[0])' )py";
  shell::Outcome rows = shell::run(count + "/run/xm-testbed/" + name_ + "/plan/inventory.sqlite", true);
  EXPECT_EQ(rows.out, "3\n") << rows.out;
  // ... and so is every heal action: the drains, the operator's undrains, the rail advice for h2's NIC.
  const std::string actions =
      R"py(python3 -c 'import sqlite3, sys; print(*sqlite3.connect(sys.argv[1]).execute()py"
      R"py("select distinct action from heal_actions order by action").fetchall())' )py";
  shell::Outcome kinds = shell::run(actions + "/run/xm-testbed/" + name_ + "/plan/inventory.sqlite", true);
  EXPECT_EQ(kinds.out, "('advise',) ('drain',) ('undrain',)\n") << kinds.out;
}

TEST_F(MonitorLive, ACutCableLosesTheFlowsThroughItOnlyAndChangesCarrier) {
  // No loss left in the controller's 10 s window from a test before.
  ASSERT_TRUE(eventually("sum(increase(xm_probe_lost_total[10s]))", [](double v) { return v == 0; }, 25));
  const double carrier_before = scalar("node_network_carrier_changes_total{host=\"h1\",device=\"nic0\"}");
  shell::Outcome cut = xm("testbed fault --name " + name_ + " --link h1/nic0 --down");
  ASSERT_EQ(cut.exit_code, 0) << cut.out;
  // Every other host's rail-0 probes of h1's nic0 are lost, within seconds.
  const std::string to_cut = "increase(xm_probe_lost_total{peer_host=\"h1\",peer_nic=\"nic0\",pair=\"rail\"}[2s]) > 0";
  EXPECT_TRUE(eventually("count(" + to_cut + ")", [](double v) { return v == 3; }, 6)) << query(to_cut).size();
  // ... and nothing on rail 1, whose cables are whole.
  EXPECT_EQ(scalar("sum(increase(xm_probe_lost_total{nic=\"nic1\",peer_nic=\"nic1\"}[3s]))"), 0);
  EXPECT_TRUE(eventually("node_network_carrier_changes_total{host=\"h1\",device=\"nic0\"}",
                         [&](double v) { return v > carrier_before; }, 5));
  EXPECT_TRUE(eventually("node_network_up{host=\"h1\",device=\"nic0\"}", [](double v) { return v == 0; }, 5));
  // The controller's evidence (/api/probes, what other algorithms are run on) says the same:
  // every flow, its counts per window, losses only on flows from or to the cut NIC.
  json probes;
  int losing_to_h1 = 0;
  for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(6);;) {
    probes = json::parse(controller(name_, "/api/probes"), nullptr, false);
    ASSERT_TRUE(probes.is_object());
    losing_to_h1 = 0;
    for (const json& f : probes["flows"]) losing_to_h1 += f["to"] == "h1/nic0" && f["lost"][0].get<double>() > 0;
    if (losing_to_h1 >= 3 || std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_GE(losing_to_h1, 3) << probes.dump().substr(0, 2000);
  EXPECT_EQ(probes["windows_seconds"].size(), 2u);
  EXPECT_EQ(double(probes["flows"].size()), scalar("count(xm_probe_sent_total)"));
  EXPECT_NE(probes["cables"].dump().find("\"h1/nic0 - tor0:h1-nic0\""), std::string::npos) << probes["cables"].dump();
  for (const json& f : probes["flows"]) {
    if (f["lost"][0].get<double>() > 0) {
      EXPECT_TRUE(f["to"] == "h1/nic0" || f["from"] == "h1/nic0") << f.dump();
    }
  }
  shell::Outcome up = xm("testbed fault --name " + name_ + " --link h1/nic0 --up");
  ASSERT_EQ(up.exit_code, 0) << up.out;
  EXPECT_TRUE(eventually("sum(increase(xm_probe_lost_total[2s]))", [](double v) { return v == 0; }, 15));
}

// Incast: two hosts send to a third at their line rate for 3 s (a job's burst); the ToR's
// port toward it overflows and loses probes, but that is congestion: the queue's own drops
// say so, and no incident opens. (Averaged over the controller's 10 s window the port ran
// at a third of its rate: no rule on its rate would tell this from a fault.)
TEST_F(MonitorLive, AnIncastThatOverflowsASwitchQueueIsCongestionNotAnIncident) {
  ASSERT_TRUE(eventually("sum(increase(xm_probe_lost_total[10s]))", [](double v) { return v == 0; }, 25));
  const std::string ns = "xm-" + name_ + "-";
  auto address = [&](const std::string& host) {
    shell::Outcome a = shell::run("ip -n " + ns + host + " -4 -o addr show nic0 | awk '{print $4}' | cut -d/ -f1", true);
    return a.out.substr(0, a.out.find('\n'));
  };
  const std::string to = address("h1");
  ASSERT_FALSE(to.empty());
  auto flood = [&](const std::string& host) {
    return "ip netns exec " + ns + host + " python3 -c 'import socket, time\n"
           "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\ns.bind((\"" + address(host) + "\", 0))\n"
           "end = time.time() + 3\nwhile time.time() < end:\n"
           "    try: s.sendto(bytes(1400), (\"" + to + "\", 9))\n"
           "    except OSError: pass\n'";
  };
  shell::Outcome sent = shell::run(flood("h0") + " & " + flood("h2") + "; wait", true);
  ASSERT_EQ(sent.exit_code, 0) << sent.out;
  EXPECT_TRUE(eventually("increase(node_qdisc_drops_total{host=\"tor0\",device=\"h1-nic0\"}[10s])",
                         [](double v) { return v > 0; }, 3));
  EXPECT_GT(scalar("sum(increase(xm_probe_lost_total{peer_host=\"h1\",peer_nic=\"nic0\"}[10s]))"), 0)
      << "the incast lost no probe: it tests nothing";
  // Three evaluations after it, its losses still in the window: nothing.
  std::this_thread::sleep_for(std::chrono::seconds(3));
  for (const json& i : open_incidents(name_)) EXPECT_FALSE(i["network"].get<bool>()) << i.dump();
}

// The dashboard in a real headless Chromium: it draws every device and cable of the plan,
// the injected fault's cable in the fault colour and no other cable but those of open
// incidents, the incident in its table and each rail's probe plots; and it screenshots.
TEST_F(MonitorLive, TheDashboardShowsAnInjectedFaultOnItsCable) {
  ASSERT_EQ(shell::run("command -v chromium", true).exit_code, 0) << "the dashboard test needs Debian's chromium";
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --link h3/nic0 --down").exit_code, 0);
  json cut = located(name_, "tor0:h3-nic0", "port-down", 10);  // (--link shuts the ToR's end)
  ASSERT_FALSE(cut.is_null()) << xm("ops locate --all --name " + name_).out;

  const std::string profile = "/tmp/xm-dashboard-test-" + std::to_string(::getpid());
  const std::string png = profile + ".png";
  // Virtual time stands still while the page's requests are out: 5 s of it are two
  // refreshes, whatever the machine's load.
  const std::string browser = "XDG_CACHE_HOME=" + profile + " timeout 120 chromium --headless --no-sandbox --disable-gpu --user-data-dir=" + profile +
                              " --virtual-time-budget=5000 --window-size=1280,1000 ";
  const std::string url = " http://127.0.0.1:" + std::to_string(controller_port(name_)) + "/ 2>/dev/null";
  // The incidents open around the page's drawing: one of an earlier test may close while
  // Chromium runs (15 s after it was last seen), none drawn can open and close within it.
  std::set<int64_t> open;
  for (const json& i : open_incidents(name_)) open.insert(i["id"].get<int64_t>());
  shell::Outcome dom = shell::run(browser + "--dump-dom" + url, true);
  for (const json& i : open_incidents(name_)) open.insert(i["id"].get<int64_t>());
  shell::Outcome shot = shell::run(browser + "--screenshot=" + png + url, true);
  ASSERT_EQ(xm("testbed fault --name " + name_ + " --link h3/nic0 --up").exit_code, 0);
  ASSERT_EQ(dom.exit_code, 0) << dom.out;

  const std::string& page = dom.out;
  EXPECT_EQ(page.find(R"(data-rendered="0")"), std::string::npos) << "the page never rendered the controller's JSON";
  std::map<std::string, std::string> cables, devices;  // name -> data-state
  std::map<std::string, int64_t> incident_of;          // cable -> data-incident
  const std::regex cable(R"re(data-cable="([^"]+)" data-state="([a-z]+)" data-incident="([0-9]+)")re");
  const std::regex device(R"re(data-device="([^"]+)" data-state="([a-z]+)")re");
  for (std::sregex_iterator m(page.begin(), page.end(), cable), end; m != end; ++m) {
    cables[(*m)[1]] = (*m)[2];
    incident_of[(*m)[1]] = std::stoll((*m)[3]);
  }
  for (std::sregex_iterator m(page.begin(), page.end(), device), end; m != end; ++m) devices[(*m)[1]] = (*m)[2];
  EXPECT_EQ(devices.size(), 8u);  // 4 hosts, 2 ToRs, 2 spines
  EXPECT_EQ(cables.size(), 12u);  // 8 host cables, 4 uplinks
  EXPECT_EQ(cables["h3/nic0 - tor0:h3-nic0"], "fault");
  EXPECT_EQ(incident_of["h3/nic0 - tor0:h3-nic0"], cut["id"].get<int64_t>());
  // Every other cable drawn as anything but healthy is an open incident's (earlier tests' faults
  // may still be open, for their clear-after time) or a drain's.
  for (const auto& [name, state] : cables) {
    if (state == "fault") {
      EXPECT_TRUE(open.count(incident_of[name])) << name << " drawn with incident " << incident_of[name] << ", not open";
    }
    if (state != "ok") {
      EXPECT_TRUE(state == "fault" || state == "drained") << name << ": " << state;
    }
  }
  EXPECT_NE(page.find("<td>tor0:h3-nic0</td><td>port-down</td>"), std::string::npos);
  EXPECT_NE(page.find(R"(data-rail="0")"), std::string::npos) << "no probe plot for rail 0";
  EXPECT_NE(page.find(R"(data-rail="1")"), std::string::npos) << "no probe plot for rail 1";

  EXPECT_EQ(shot.exit_code, 0) << shot.out;
  std::ifstream image(png, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(image)), std::istreambuf_iterator<char>());
  EXPECT_EQ(bytes.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(bytes.size(), 20000u);  // a drawn page, not a blank one
  std::remove(png.c_str());
  shell::run("rm -rf " + profile, true);
}

// A controller that cannot read Prometheus says its incidents are stale (exit 2) rather
// than report a healthy fabric, and says so no longer once it reads again.
TEST_F(MonitorLive, AControllerThatCannotEvaluateCallsItsIncidentsStale) {
  int pid = 0;
  std::ifstream("/run/xm-testbed/" + name_ + "/monitor/prometheus.pid") >> pid;
  ASSERT_GT(pid, 0);
  ASSERT_EQ(::kill(pid, SIGSTOP), 0);  // frozen: every query times out
  shell::Outcome o{0, ""};
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline && (o = xm("ops locate --name " + name_)).exit_code != 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGCONT);
  EXPECT_EQ(o.exit_code, 2) << o.out;
  EXPECT_NE(o.out.find("stale"), std::string::npos) << o.out;
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline && (o = xm("ops locate --name " + name_)).exit_code == 2)
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_NE(o.exit_code, 2) << "still stale after Prometheus came back: " << o.out;
}

// Last: stopping the monitor leaves no agent and no Prometheus.
TEST_F(MonitorLive, StopEndsEveryProcessItStarted) {
  shell::Outcome s = xm("ops monitor --stop --name " + name_);
  EXPECT_EQ(s.exit_code, 0) << s.out;
  EXPECT_NE(s.out.find("stopped 10 process"), std::string::npos) << s.out;  // 8 agents, Prometheus, the controller
  // (agents name the plan, Prometheus and the controller the monitor directory or the
  // testbed; FRR and lldpd neither)
  shell::Outcome left =
      shell::run("pgrep -f 'xm-testbed/" + name_ + "/(plan|monitor)' | xargs -r ps -o pid=,stat=,args= -p | grep -v ' Z'", true);
  EXPECT_NE(left.exit_code, 0) << "still running: " << left.out;
  httplib::Client c("127.0.0.1", prometheus_port_);
  EXPECT_FALSE(c.Get("/-/ready"));
}

}  // namespace
