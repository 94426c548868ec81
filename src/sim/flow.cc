#include "sim/flow.h"

#include <string>

namespace xm::sim {

Status check_flow(const FlowSpec& spec, uint32_t id, uint32_t hosts) {
  const std::string flow = "flow " + std::to_string(id);
  if (spec.src >= hosts || spec.dst >= hosts)
    return Error{flow + ": host out of range (there are " + std::to_string(hosts) + ")"};
  if (spec.src == spec.dst && spec.bytes > 0) return Error{flow + ": source and destination are the same host"};
  for (uint32_t d : spec.after)
    if (d >= id) return Error{flow + ": depends on flow " + std::to_string(d) + ", which is not earlier"};
  if (spec.follows != UINT32_MAX && spec.follows >= id)
    return Error{flow + ": follows flow " + std::to_string(spec.follows) + ", which is not earlier"};
  return Status::Ok();
}

}  // namespace xm::sim
