#include "ccl/shm/shm_transport.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "ccl/net/auth.h"
#include "ccl/shm/cross_memory.h"

namespace xm::ccl {
namespace {

size_t slot_bytes(size_t fifo_bytes) { return kFifoHeader + fifo_bytes; }
// The segment: a line of its owner's state (SegmentHeader), then one FIFO per local rank.
constexpr size_t kSegmentHeader = 64;
static_assert(sizeof(SegmentHeader) <= kSegmentHeader);
size_t segment_bytes(int ranks, size_t fifo_bytes) { return kSegmentHeader + slot_bytes(fifo_bytes) * size_t(ranks); }

Result<void*> map(int fd, size_t bytes, const std::string& name) {
  // MAP_POPULATE: fault every page in now, not one by one on the data path (this VM
  // pays ~12 us per first touch of a page).
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return Error{"mmap " + name + ": " + std::strerror(errno)};
  return p;
}

}  // namespace

size_t default_fifo_bytes(int local_ranks) {
  constexpr size_t kHostBudget = 8 << 20, kMin = 256 << 10, kMax = 4 << 20;
  const size_t fifos = size_t(std::max(local_ranks, 2)) * size_t(std::max(local_ranks - 1, 1));
  size_t bytes = kMax;
  while (bytes > kMin && bytes * fifos > kHostBudget) bytes /= 2;
  return bytes;
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::create(int ranks, size_t fifo_bytes) {
  std::unique_ptr<ShmSegment> s(new ShmSegment);
  // A random name: unguessable, so no other job can open it by accident.
  s->name_ = "/xccl-" + net::to_hex(net::random_secret()).substr(0, 24);
  s->bytes_ = segment_bytes(ranks, fifo_bytes);
  s->fifo_bytes_ = fifo_bytes;
  int fd = ::shm_open(s->name_.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Error{"shm_open " + s->name_ + ": " + std::strerror(errno)};
  s->owner_ = s->linked_ = true;
  if (::ftruncate(fd, off_t(s->bytes_)) != 0) {
    ::close(fd);
    return Error{"ftruncate " + s->name_ + ": " + std::strerror(errno) + " (is /dev/shm large enough?)"};
  }
  Result<void*> p = map(fd, s->bytes_, s->name_);
  ::close(fd);
  if (!p) return p.error();
  s->base_ = *p;
  new (s->base_) SegmentHeader;  // headers constructed once, by the owner
  for (int r = 0; r < ranks; ++r) ByteFifo(s->fifo_memory(r), fifo_bytes, true);
  return s;
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::open(const std::string& name, int ranks, size_t fifo_bytes) {
  std::unique_ptr<ShmSegment> s(new ShmSegment);
  s->name_ = name;
  s->bytes_ = segment_bytes(ranks, fifo_bytes);
  s->fifo_bytes_ = fifo_bytes;
  int fd = ::shm_open(name.c_str(), O_RDWR, 0600);
  if (fd < 0) return Error{"shm_open " + name + ": " + std::strerror(errno)};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || size_t(st.st_size) != s->bytes_) {
    ::close(fd);
    return Error{"shared memory segment " + name + " has the wrong size"};
  }
  Result<void*> p = map(fd, s->bytes_, name);
  ::close(fd);
  if (!p) return p.error();
  s->base_ = *p;
  return s;
}

ShmSegment::~ShmSegment() {
  if (base_) ::munmap(base_, bytes_);
  unlink();
}

void ShmSegment::unlink() {
  if (owner_ && linked_) ::shm_unlink(name_.c_str());
  linked_ = false;
}

std::byte* ShmSegment::fifo_memory(int from) const {
  return static_cast<std::byte*>(base_) + kSegmentHeader + slot_bytes(fifo_bytes_) * size_t(from);
}

ByteFifo ShmSegment::fifo_from(int from) const { return ByteFifo(fifo_memory(from), fifo_bytes_, false); }

namespace {

// Frame header in the FIFO: what follows and how much of it.
struct FrameHeader {
  uint32_t kind;  // kDataFrame, ...
  uint32_t bytes;  // data: payload bytes that follow
};
struct Descriptor {
  uint64_t id, offset, bytes;  // the sender's registered allocation and the span in it
};
struct RemoteSpan {
  uint64_t address, bytes;  // in the sender's address space, read by cross-memory attach
};
constexpr uint32_t kDataFrame = 1, kDescriptorFrame = 2, kSkipFrame = 3,  // skip: filler up to the FIFO's end
    kRemoteFrame = 4;
constexpr size_t kMinDataFrame = 4096;
// Every frame starts on a cache line of the stream, and a data frame's payload one line
// after its header: copies into and out of the FIFO then run on whole, aligned lines
// (a payload 8 bytes into a line made every other vector load and store of a copy or a
// reduction straddle two lines). Frames end padded with zeros to the next line.
constexpr size_t kFrameAlign = 64;
constexpr size_t padding(size_t bytes) { return (kFrameAlign - bytes % kFrameAlign) % kFrameAlign; }
constexpr std::byte kZeros[kFrameAlign] = {};
constexpr size_t kMaxFrame = size_t(UINT32_MAX) & ~size_t{7};  // don't fragment into tiny frames when the FIFO is nearly full
// Cross-memory reads: at most this much per system call, so one large transfer does
// not hold up the rank's other links for long; and the piece staged for reductions.
constexpr size_t kMaxRemoteRead = 1 << 20, kBounceBytes = 128 << 10;

// A header with what follows it in the same line (descriptors), padded to the line.
template <typename Body>
struct alignas(8) Framed {
  FrameHeader h;
  Body body;
  std::byte pad[kFrameAlign - sizeof(FrameHeader) - sizeof(Body)] = {};
};
static_assert(sizeof(Framed<Descriptor>) == kFrameAlign && sizeof(Framed<RemoteSpan>) == kFrameAlign);

}  // namespace

size_t ShmLink::post(const void* frame, size_t frame_bytes, uint64_t bytes) {
  uint64_t base = out_.acked();  // before posting: the receiver may ack at once
  if (!out_.write_all(frame, frame_bytes)) return 0;
  posted_bytes_ = bytes, posted_returned_ = 0, ack_base_ = base;
  return 0;
}

size_t ShmLink::send(const std::byte* data, size_t bytes, bool pulled) {
  if (posted_bytes_ > 0) {  // a descriptor is out: report what the receiver has used
    uint64_t used = out_.acked() - ack_base_;
    size_t fresh = size_t(used - posted_returned_);
    posted_returned_ = used;
    if (used == posted_bytes_) posted_bytes_ = 0;
    return fresh;
  }
  if (bytes >= kZeroCopyMinBytes) {
    if (std::optional<RegisteredSpan> reg = registered_lookup(data, bytes)) {
      Framed<Descriptor> f{{kDescriptorFrame, 0}, {reg->id, reg->offset, bytes}};
      return post(&f, sizeof f, bytes);
    }
    if (pulled && peer_reads_our_memory_ && bytes >= kPullMinBytes) {
      Framed<RemoteSpan> f{{kRemoteFrame, 0}, {uint64_t(reinterpret_cast<uintptr_t>(data)), bytes}};
      return post(&f, sizeof f, bytes);
    }
  }
  return send_copy(data, bytes);
}

size_t ShmLink::send_copy(const std::byte* data, size_t bytes) {
  // Data frame: a line holding the header, the payload, zeros to the next line. A part
  // of a send keeps whole elements (a multiple of 8 bytes).
  size_t room = out_.free_space();
  size_t want = std::min(bytes, kMaxFrame);
  const size_t min_frame = std::min(kMinDataFrame, out_.capacity() / 4), overhead = 2 * kFrameAlign;
  if (room < overhead + std::min(want, min_frame)) return 0;
  size_t n = std::min(want, (room - overhead) & ~size_t{7});
  if (n < want && n < min_frame) return 0;
  if (n == 0) return 0;
  Framed<uint32_t> head{{kDataFrame, uint32_t(n)}, 0};
  out_.write(reinterpret_cast<const std::byte*>(&head), sizeof head);
  out_.write(data, n);
  out_.write(kZeros, padding(n));
  return n;
}

std::span<std::byte> ShmLink::reserve(size_t bytes) {
  // A data frame written in place must be contiguous: header, payload, padding. When
  // too little of the room before the FIFO's end is free, fill it with a skip frame and
  // start again at the front.
  const size_t min_frame = std::min(kMinDataFrame, out_.capacity() / 4);
  const size_t overhead = 2 * kFrameAlign;  // the header's line and the most padding
  for (int pass = 0; pass < 2; ++pass) {
    std::span<std::byte> room = out_.writable();
    size_t n = room.size() > overhead ? std::min({bytes, room.size() - overhead, kMaxFrame}) : 0;
    if (n < bytes) n &= ~size_t{7};  // a part: keep the frames after it whole elements
    if (n > 0 && (n == bytes || n >= min_frame)) {
      reserved_ = room.data();
      return room.subspan(kFrameAlign, n);
    }
    // Skip only a stretch that reaches the end (whole lines, as every frame is) and
    // only when more is free at the front; else wait for the reader.
    if (room.empty() || room.size() != out_.until_end() || out_.free_space() == room.size()) break;
    FrameHeader skip{kSkipFrame, uint32_t(room.size() - sizeof(FrameHeader))};
    std::memcpy(room.data(), &skip, sizeof skip);
    out_.commit(room.size());
  }
  return {};
}

void ShmLink::commit(size_t bytes) {
  Framed<uint32_t> head{{kDataFrame, uint32_t(bytes)}, 0};
  std::memcpy(reserved_, &head, sizeof head);
  std::memset(reserved_ + kFrameAlign + bytes, 0, padding(bytes));
  out_.commit(kFrameAlign + bytes + padding(bytes));
}

bool ShmLink::fifo_corrupt() {
  if (in_.available() <= in_.capacity()) return false;
  protocol_ = Error{"corrupt FIFO in shared memory: the peer counts more bytes written than it holds"};
  return true;
}

bool ShmLink::next_frame() {
  if (fifo_corrupt()) return false;
  if (pad_ > 0) {  // the zeros after the last data frame
    std::byte skip[kFrameAlign];
    if (!in_.peek_exact(skip, pad_)) return false;
    in_.consume(pad_);
    pad_ = 0;
  }
  FrameHeader h;
  while (protocol_.ok() && in_.peek_exact(&h, sizeof h)) {
    switch (h.kind) {
      case kSkipFrame:
        if (in_.readable().size() < sizeof h + h.bytes) {
          protocol_ = Error{"corrupt skip frame in shared memory"};
          return false;
        }
        in_.consume(sizeof h + h.bytes);
        continue;
      case kDataFrame:
        if (in_.available() < kFrameAlign) return false;  // (an honest peer commits the line in one go)
        in_.consume(kFrameAlign);
        frame_ = Frame::kData, frame_left_ = h.bytes, pad_ = uint32_t(padding(h.bytes));
        return frame_left_ > 0 || next_frame();
      case kDescriptorFrame: {
        Framed<Descriptor> f;
        if (!in_.peek_exact(&f, sizeof f)) return false;
        in_.consume(kFrameAlign);
        Result<const std::byte*> at = peer_memory_.map(f.body.id, f.body.offset, f.body.bytes);
        if (!at) {
          protocol_ = Error{"rank's descriptor: " + at.error().message};
          return false;
        }
        frame_ = Frame::kDescriptor, frame_left_ = f.body.bytes, in_place_ = *at;
        return frame_left_ > 0 || next_frame();
      }
      case kRemoteFrame: {
        Framed<RemoteSpan> f;
        if (!in_.peek_exact(&f, sizeof f)) return false;
        in_.consume(kFrameAlign);
        frame_ = Frame::kRemote, frame_left_ = f.body.bytes, remote_next_ = f.body.address;
        return frame_left_ > 0 || next_frame();
      }
      default:
        protocol_ = Error{"corrupt frame in shared memory (kind " + std::to_string(h.kind) + ")"};
        return false;
    }
  }
  return false;
}

bool ShmLink::fill_bounce() {
  if (bounce_.empty()) bounce_.resize(kBounceBytes);
  size_t n = size_t(std::min<uint64_t>(frame_left_, bounce_.size()));
  if (Status st = read_memory_of(peer_pid_, remote_next_, bounce_.data(), n); !st) {
    protocol_ = Error{"cross-memory read from the peer: " + st.message()};
    return false;
  }
  remote_next_ += n;
  in_.ack(n);  // copied out: the sender may reuse them
  bounce_at_ = 0, bounce_end_ = n;
  return true;
}

std::span<const std::byte> ShmLink::readable() {
  const bool copier = std::exchange(copier_waiting_, false);
  if (frame_left_ == 0 && !next_frame()) return {};
  switch (frame_) {
    case Frame::kDescriptor: return {in_place_, size_t(frame_left_)};
    case Frame::kRemote:
      if (bounce_at_ == bounce_end_ && (copier || !fill_bounce())) return {};
      return {bounce_.data() + bounce_at_, bounce_end_ - bounce_at_};
    default: {
      std::span<const std::byte> v = in_.readable();
      if (v.empty() && fifo_corrupt()) return {};  // (asked only when nothing is readable: off the hot path)
      return v.first(std::min<size_t>(v.size(), frame_left_));
    }
  }
}

void ShmLink::consume(size_t bytes) {
  frame_left_ -= bytes;
  switch (frame_) {
    case Frame::kDescriptor:
      in_place_ += bytes;
      in_.ack(bytes);  // the sender may reuse these bytes now
      break;
    case Frame::kRemote: bounce_at_ += bytes; break;  // acknowledged when copied out
    default: in_.consume(bytes);
  }
}

size_t ShmLink::receive_into(std::byte* dst, size_t bytes) {
  if (frame_left_ == 0 && !next_frame()) return (copier_waiting_ = true, 0);
  if (frame_ != Frame::kRemote || bounce_at_ != bounce_end_) return 0;  // a view serves these
  size_t n = size_t(std::min<uint64_t>({bytes, frame_left_, kMaxRemoteRead}));
  if (Status st = read_memory_of(peer_pid_, remote_next_, dst, n); !st) {
    protocol_ = Error{"cross-memory read from the peer: " + st.message()};
    return 0;
  }
  remote_next_ += n, frame_left_ -= n;
  in_.ack(n);
  return n;
}

Status ShmLink::status() const {
  if (!protocol_.ok()) return protocol_;
  if (in_.closed()) return Error{"peer process " + std::to_string(peer_pid_) + " aborted its communicator"};
  if (peer_gone_) return Error{"peer process " + std::to_string(peer_pid_) + " exited"};
  auto now = std::chrono::steady_clock::now();
  if (now < next_check_) return Status::Ok();
  next_check_ = now + std::chrono::milliseconds(100);
  if (::kill(peer_pid_, 0) != 0 && errno == ESRCH) {
    peer_gone_ = true;
    return Error{"peer process " + std::to_string(peer_pid_) + " exited"};
  }
  return Status::Ok();
}

}  // namespace xm::ccl
