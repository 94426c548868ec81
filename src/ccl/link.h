// A link: this rank's connection to one peer, a byte stream each way. The executor
// needs nothing else from a transport.
//
// Contract: called from one thread (the rank's progress thread); no call blocks. Bytes
// arrive in the order they were sent. A link that fails (peer gone, protocol broken)
// reports it through status(); the executor then fails the collective.
#pragma once

#include <poll.h>

#include <cstddef>
#include <span>
#include <vector>
#include <string>

#include "ccl/fifo.h"
#include "ccl/schedules.h"
#include "util/result.h"

namespace xm::ccl {

class Link {
 public:
  virtual ~Link() = default;
  // Takes up to `bytes` from `data` into the outgoing stream; returns how many (0 when
  // the stream is full for now).
  virtual size_t send_some(const std::byte* data, size_t bytes) = 0;
  // The same, but always copying into the stream, so the send completes once buffered
  // (send_some may pass registered memory by reference and complete when it is read).
  virtual size_t send_copy(const std::byte* data, size_t bytes) { return send_some(data, bytes); }
  // The same for bytes the receiver will only copy (Step::pull): the link may also let
  // it copy plain memory straight out of this process (completing when it has).
  virtual size_t send_pulled(const std::byte* data, size_t bytes) { return send_some(data, bytes); }
  // Bytes that arrived and were not consumed, as one contiguous view (possibly only a
  // part of them).
  virtual std::span<const std::byte> readable() = 0;
  virtual void consume(size_t bytes) = 0;
  // Copies up to `bytes` of the incoming stream straight into dst when the link can
  // without a view (bytes it copies out of the peer's memory itself: cross-memory
  // attach), and consumes them; 0 when it cannot now, and the caller reads readable()
  // (which may come back empty while bytes that arrived meanwhile wait for the next
  // receive_into: the caller polls again).
  virtual size_t receive_into(std::byte* /*dst*/, size_t /*bytes*/) { return 0; }
  // Streams in memory both ends map (shared memory): readable() gives whole elements at
  // their natural alignment, and reserve()/commit() let a relay write the outgoing
  // stream in place. Other links return false and an empty reservation.
  virtual bool in_memory() const { return false; }
  // Room for up to `bytes` of the outgoing stream, written in place, then passed with
  // commit(n) (n at most the room, a multiple of 8 unless it ends the sender's step).
  virtual std::span<std::byte> reserve(size_t /*bytes*/) { return {}; }
  virtual void commit(size_t /*bytes*/) {}
  // Moves bytes along for transports that need it (sockets); shared memory does nothing.
  virtual void progress() {}
  // True while the link has bytes of its own to move with no step pending: a send it took
  // but has not yet handed to the network, stripes to resend. The executor keeps calling
  // progress() meanwhile.
  virtual bool busy() const { return false; }
  // True while bytes that send steps handed over are still waiting here to reach the
  // network (a socket). The executor does not call an operation done before they have:
  // after it, nothing may drive this link for a while (init's bootstrap exchange, a
  // destroy), and a peer waiting on those bytes would wait for good.
  virtual bool unsent() const { return false; }
  // For an idle rank to sleep in the kernel instead of spinning: appends the descriptors
  // whose readiness would let this link move (reading; and writing when `sending`).
  // False when the link cannot be waited on that way (shared memory).
  virtual bool wait_fds(bool /*sending*/, std::vector<pollfd>& /*out*/) const { return false; }
  // Tells the peer this rank is gone (abort): its pending steps with us fail at once.
  virtual void close() {}
  // Ok while the link can still carry what is asked of it; an error once the peer is
  // gone (or the protocol broke). Checked only while steps with this peer are pending:
  // a peer that finished its part may leave.
  virtual Status status() const { return Status::Ok(); }
};

// A link over two FIFOs in memory both sides see: `out` written here, `in` read here.
class FifoLink final : public Link {
 public:
  FifoLink(ByteFifo out, ByteFifo in) : out_(out), in_(in) {}
  size_t send_some(const std::byte* data, size_t bytes) override { return out_.write(data, bytes); }
  std::span<const std::byte> readable() override { return in_.readable(); }
  void consume(size_t bytes) override { in_.consume(bytes); }

 private:
  ByteFifo out_, in_;
};

}  // namespace xm::ccl
