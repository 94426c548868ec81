// The testbed's daemons: FRR (zebra, bfdd, bgpd) in every switch's namespace, loaded
// with the switch's frr.conf from the fabric plan, and lldpd in every namespace, named
// as the plan names the device and reporting ports by interface name. Each daemon's
// sockets, pid file and log live in runtime_dir(NAME)/<device>/; `down` kills the
// daemons with everything else in the namespaces and removes the directory.
#pragma once

#include <chrono>
#include <string>

#include "testbed/plan.h"
#include "util/result.h"

namespace xm::testbed {

// state_dir()/NAME: the fabric plan (plan/) and the daemons' directories.
std::string runtime_dir(const std::string& name);
std::string plan_dir(const std::string& name);
// Where a device's daemons keep their sockets: vtysh --vty_socket, lldpcli -u <dir>/lldpd.socket.
std::string daemon_dir(const std::string& name, const std::string& device);
// The rails the monitor's controller advises jobs against (XCCL_RAIL_ADVICE; ops/heal.h).
std::string rail_advice_path(const std::string& name);

// Errors that name the Debian package when FRR or lldpd is missing.
Status check_daemons_installed();

// Starts FRR on every switch (then loads its frr.conf) and lldpd everywhere.
Status start_daemons(const Plan& plan);

// Restarts lldpd on one device. lldpd keeps its port by name when an interface leaves
// the namespace and another of that name comes in (a re-cable here), and then sends and
// hears nothing on it; a restart takes the ports afresh. It has heard every neighbour
// again one transmit interval (1 s) later.
Status restart_lldpd(const Plan& plan, const std::string& device);

// Waits until every ToR has a route to every other rail's subnet over all of its
// uplinks (BGP established, ECMP complete). The error names what is still missing.
Status wait_for_routes(const Plan& plan, std::chrono::milliseconds timeout);

}  // namespace xm::testbed
