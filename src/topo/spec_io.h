// Reading and writing cluster specs: YAML for people, JSON for programs.
//
// Both forms hold the same fields (docs/topology.md lists them). Reading either form
// returns an Error whose message names the source, line, column and field and says what
// was expected, e.g.
//   cluster.yaml:12:5: fabric.tor.ports: 64 servers × 1 NIC port(s) each + 64 uplinks
//   need 128 ports, but a ToR has 64
// Nothing is defaulted silently that the reader could not have meant: unknown fields,
// duplicate keys, wrong types and impossible numbers are all errors.
// Writing then reading gives back an equal spec, and writing that again identical text.
#pragma once

#include <string>
#include <string_view>

#include "topo/spec.h"
#include "util/result.h"

namespace xm::topo {

// Parses YAML (or JSON, which is valid YAML) text. `source` names it in messages.
Result<ClusterSpec> parse_spec(std::string_view text, const std::string& source);

// Reads the file at `path` and parses it.
Result<ClusterSpec> load_spec(const std::string& path);

std::string spec_to_yaml(const ClusterSpec& spec);
std::string spec_to_json(const ClusterSpec& spec);

// Writes YAML, or JSON when `path` ends in ".json". "-" writes YAML to stdout.
Status save_spec(const ClusterSpec& spec, const std::string& path);

}  // namespace xm::topo
