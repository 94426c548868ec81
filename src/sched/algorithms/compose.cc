#include "sched/algorithms/compose.h"

namespace xm::sched {

std::vector<uint32_t> append_phase(Schedule& s, const Schedule& phase, std::span<const int> group,
                                   const PhaseBuffers& where, const std::vector<uint32_t>& after) {
  const uint32_t base = uint32_t(s.steps.size());
  const uint64_t scratch_base = s.scratch_elements;
  s.scratch_elements += phase.scratch_elements;
  auto place = [&](Region r) {
    switch (r.buffer) {
      case Buffer::kInput: return Region{where.input.buffer, where.input.place(r.offset)};
      case Buffer::kOutput: return Region{where.output.buffer, where.output.place(r.offset)};
      case Buffer::kScratch: return Region{Buffer::kScratch, scratch_base + r.offset};
      default: return r;
    }
  };
  std::vector<bool> waited_on(phase.steps.size(), false);
  for (const Step& st : phase.steps) {
    Step t = st;
    if (t.peer >= 0) t.peer = group[t.peer];
    if (t.to >= 0) t.to = group[t.to];
    t.src = place(t.src);
    t.dst = place(t.dst);
    for (uint32_t& d : t.after) {
      waited_on[d] = true;
      d += base;
    }
    if (st.after.empty()) t.after = after;
    s.steps.push_back(std::move(t));
  }
  std::vector<uint32_t> last;
  for (uint32_t i = 0; i < phase.steps.size(); ++i)
    if (!waited_on[i]) last.push_back(base + i);
  return last;
}

}  // namespace xm::sched
