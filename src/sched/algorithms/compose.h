// Building schedules from schedules: an algorithm for a group of ranks (the ranks of a
// host, the ranks of a rail) runs as a phase of a larger one, its peers renamed to
// ranks of the whole communicator and its buffers placed inside the larger buffers.
#pragma once

#include <span>
#include <vector>

#include "sched/schedule.h"

namespace xm::sched {

// Where a phase's buffer lies in the whole schedule's buffers: at `offset`; or, when
// `block` is set, the phase's blocks of `block` elements are `stride` apart (a slice of
// every rank's block of a larger buffer). Offsets in elements.
struct Placement {
  BufferId buffer;
  uint64_t offset = 0;
  uint64_t block = 0, stride = 0;
  uint64_t place(uint64_t o) const { return offset + (block ? o / block * stride + o % block : o); }
};

struct PhaseBuffers {
  Placement input, output;  // the phase's kInput and kOutput
};

// Appends `phase`: peer p becomes group[p]; kInput / kOutput regions move per `where`;
// its scratch gets a region of its own after what `s` already uses. Steps that wait for
// nothing in the phase wait for `after`. Returns the phase's last steps (those no other
// step of the phase waits for), for the next phase to wait on.
std::vector<uint32_t> append_phase(Schedule& s, const Schedule& phase, std::span<const int> group,
                                   const PhaseBuffers& where, const std::vector<uint32_t>& after);

}  // namespace xm::sched
