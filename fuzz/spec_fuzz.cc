// libFuzzer harness for the cluster-spec reader.
//
// Any input must give either an Error or a spec; an accepted spec must be valid, must
// survive a write/read round trip unchanged in both forms, and (when small) must build
// into a fabric whose summary agrees with the spec. Crashes, sanitizer reports and
// broken round trips are all findings.
//
//   cmake --preset asan && cmake --build --preset asan
//   build/asan/fuzz/spec_fuzz -max_total_time=300 fuzz/corpus
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "topo/fabric.h"
#include "topo/metrics.h"
#include "topo/spec_io.h"

namespace {

void require(bool ok, const char* what) {
  if (!ok) {
    fprintf(stderr, "spec_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace xm::topo;
  xm::Result<ClusterSpec> spec = parse_spec(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.yaml");
  if (!spec) {
    require(!spec.error().message.empty(), "an error has a message");
    return 0;
  }
  require(validate(*spec).empty(), "an accepted spec validates");
  xm::Result<ClusterSpec> yaml = parse_spec(spec_to_yaml(*spec), "again.yaml");
  require(yaml.ok() && *yaml == *spec, "YAML round trip");
  xm::Result<ClusterSpec> json = parse_spec(spec_to_json(*spec), "again.json");
  require(json.ok() && *json == *spec, "JSON round trip");

  uint64_t accelerators = uint64_t{spec->servers} * spec->server.accelerators;
  if (accelerators > 4096) return 0;  // keep each input fast; size limits are tested elsewhere
  xm::Result<Fabric> fabric = build_fabric(*spec);
  require(fabric.ok(), "a valid spec builds");
  Summary s = summarize(*fabric);
  require(s.accelerators == accelerators, "accelerator count");
  require(s.host_links == uint64_t{spec->servers} * spec->server.nics.size() * spec->server.nic_ports,
          "every NIC port is cabled once");
  return 0;
}
