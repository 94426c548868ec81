// Helpers the topo tests share: build a fabric or load an example, failing the test
// (not crashing) when that is impossible.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "topo/fabric.h"
#include "topo/spec_io.h"

namespace xm::topo::test_support {

inline Fabric build(const ClusterSpec& spec) {
  Result<Fabric> f = build_fabric(spec);
  EXPECT_TRUE(f.ok()) << (f ? "" : f.error().message);
  return f ? std::move(f).value() : Fabric{};
}

inline ClusterSpec example_spec(const std::string& file) {
  Result<ClusterSpec> spec = load_spec(std::string(XM_EXAMPLES_DIR) + "/" + file);
  EXPECT_TRUE(spec.ok()) << (spec ? "" : spec.error().message);
  return spec ? *spec : ClusterSpec{};
}

inline Fabric example(const std::string& file) { return build(example_spec(file)); }

}  // namespace xm::topo::test_support
