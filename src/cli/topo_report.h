// How `xm topo` prints what the topo library computes: text for people, JSON for
// programs, Graphviz for pictures.
#pragma once

#include <string>

#include "topo/metrics.h"
#include "topo/paths.h"

namespace xm::cli {

std::string summary_text(const topo::Summary& s, const std::string& source);
std::string summary_json(const topo::Summary& s, const std::string& source);

// Paths between two accelerators, with the reason they are (or are not) one ToR hop apart.
std::string path_text(const topo::Fabric& f, topo::NodeId a, topo::NodeId b, const topo::PathSet& p);
std::string path_json(const topo::Fabric& f, topo::NodeId a, topo::NodeId b, const topo::PathSet& p);

// Where a traffic matrix's bytes go: inside servers, one ToR hop (inside a rail), higher.
std::string traffic_text(const topo::TrafficShare& t, const std::string& what, const std::string& source,
                         size_t demands);
std::string traffic_json(const topo::TrafficShare& t, const std::string& what, size_t demands);

// The whole fabric as a Graphviz graph: a box per server, switches ranked by tier,
// NIC links coloured by rail, parallel links drawn once with their count.
std::string fabric_dot(const topo::Fabric& f);

}  // namespace xm::cli
