// Cross-memory attach (Linux's process_vm_readv): a rank copies bytes straight out of a
// local peer's private memory, the kernel doing the one copy. It is how plain (malloc'd)
// buffers cross between processes with one copy instead of two (into a FIFO, out of it),
// as Open MPI's and UCX's shared-memory transports do; and the peer need not be running
// for its bytes to be read, which matters when ranks outnumber cores.
//
// It needs the kernel to let this process read the peer's (same user, the peer
// dumpable, no seccomp filter against it, and under Yama's ptrace_scope 1 the peer's
// consent): so every pair is probed at start-up, and a pair that cannot falls back to
// the FIFOs.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

#include "util/result.h"

namespace xm::ccl {

// Lets local peers read this process's memory: under Yama's ptrace_scope 1 (Ubuntu's
// default) a process must name who may, and ranks' pids are known only later, so any
// process of this user may (what Open MPI's shared-memory transport does too). A no-op
// where Yama is absent or stricter. Call before publishing the probe address.
void allow_cross_memory_reads();

// The address of a word of this process holding a known value, for peers to probe.
uint64_t cross_memory_probe_address();
// True if this process can read `pid`'s memory: reads its probe word at `address`.
bool can_read_memory_of(pid_t pid, uint64_t address);

// Copies [address, address + bytes) of process `pid` into dst; all or an error.
Status read_memory_of(pid_t pid, uint64_t address, void* dst, size_t bytes);

}  // namespace xm::ccl
