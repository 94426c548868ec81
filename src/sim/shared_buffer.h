// A switch's shared packet buffer: admission, dynamic thresholds, and when to send PFC.
//
// Accounting follows the scheme of the HPCC simulator (and of shared-buffer switch
// chips): every (ingress port, class) has a small reserve; beyond it, packets draw on
// the shared pool; the shared bytes one ingress queue may hold before it pauses its
// upstream is a dynamic threshold, a fraction 2^-shift of the pool still free (faster
// ports get a larger fraction). Past that point packets land in per-port headroom, sized
// to absorb what is already on the wire while the PAUSE travels. With PFC on, a packet is
// dropped only if headroom is exhausted too. With PFC off (lossy), the threshold applies
// per egress queue instead: a queue longer than 2^-egress_shift of the free pool drops.
//
// Class 0 (ACKs and NACKs) bypasses admission and never pauses: it is tiny, and a
// lossless fabric must not drop the packets that let data make progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace xm::sim {

inline constexpr int kClasses = 4;  // 0 = control, 1..3 = data

struct BufferConfig {
  uint64_t buffer_bytes = 32u << 20;
  uint32_t reserve_bytes = 4096;        // per (ingress port, data class)
  uint32_t resume_offset_bytes = 3072;  // hysteresis between PAUSE and RESUME
  bool pfc = true;
  uint32_t egress_shift = 1;            // lossy mode: a queue may take 1/2 of the free pool
  uint32_t data_classes = 1;            // data classes that get headroom and reserve
};

class SharedBuffer {
  static size_t at(uint32_t port, int cls) { return size_t(port) * kClasses + size_t(cls); }

 public:
  // One entry per local port: its PFC headroom per data class and its threshold shift.
  void configure(const BufferConfig& config, const std::vector<uint32_t>& headroom,
                 const std::vector<uint32_t>& shift);

  enum class Admit : uint8_t { kDrop, kAdmit, kAdmitAndPause };
  // A packet of `bytes` arrives on `in` for egress `out`, class `cls`: dropped, or queued
  // (and then, whether ingress queue (in, cls) must now PAUSE its upstream; if so it is
  // marked paused and the caller sends the frame).
  Admit arrive(uint32_t in, uint32_t out, int cls, uint32_t bytes);
  // A queued packet leaves. True if ingress queue (in, cls) may now RESUME its upstream
  // (it is marked resumed; the caller sends the frame).
  bool depart(uint32_t in, uint32_t out, int cls, uint32_t bytes);

  uint64_t used() const { return used_; }
  uint64_t egress_bytes(uint32_t out, int cls) const { return cell_[at(out, cls)].egress; }
  uint64_t headroom_used(uint32_t in, int cls) const { return cell_[at(in, cls)].headroom; }
  bool paused(uint32_t in, int cls) const { return cell_[at(in, cls)].paused; }

 private:
  uint64_t pfc_threshold(uint32_t shift) const;

  BufferConfig config_;
  uint64_t total_headroom_ = 0, total_reserve_ = 0;
  uint64_t used_ = 0, shared_used_ = 0;
  // Per (port, class): what arrived on it (ingress), what of that sits in headroom, what
  // waits to leave through it (egress), whether its upstream is paused, and the port's
  // limits. Together, so one packet's bookkeeping touches few cache lines.
  struct Cell {
    uint64_t ingress = 0, headroom = 0, egress = 0;
    uint32_t headroom_limit = 0;
    uint8_t shift = 0;
    bool paused = false;
  };
  std::vector<Cell> cell_;
};

}  // namespace xm::sim
