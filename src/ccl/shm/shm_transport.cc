#include "ccl/shm/shm_transport.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ccl/net/auth.h"

namespace xm::ccl {
namespace {

size_t slot_bytes(size_t fifo_bytes) { return kFifoHeader + fifo_bytes; }

Result<void*> map(int fd, size_t bytes, const std::string& name) {
  // MAP_POPULATE: fault every page in now, not one by one on the data path (this VM
  // pays ~12 us per first touch of a page).
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  if (p == MAP_FAILED) return Error{"mmap " + name + ": " + std::strerror(errno)};
  return p;
}

}  // namespace

Result<std::unique_ptr<ShmSegment>> ShmSegment::create(int ranks, size_t fifo_bytes) {
  std::unique_ptr<ShmSegment> s(new ShmSegment);
  // A random name: unguessable, so no other job can open it by accident.
  s->name_ = "/xccl-" + net::to_hex(net::random_secret()).substr(0, 24);
  s->bytes_ = slot_bytes(fifo_bytes) * size_t(ranks);
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
  for (int r = 0; r < ranks; ++r)  // headers constructed once, by the owner
    ByteFifo(static_cast<std::byte*>(s->base_) + slot_bytes(fifo_bytes) * r, fifo_bytes, true);
  return s;
}

Result<std::unique_ptr<ShmSegment>> ShmSegment::open(const std::string& name, int ranks, size_t fifo_bytes) {
  std::unique_ptr<ShmSegment> s(new ShmSegment);
  s->name_ = name;
  s->bytes_ = slot_bytes(fifo_bytes) * size_t(ranks);
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

ByteFifo ShmSegment::fifo_from(int from) const {
  return ByteFifo(static_cast<std::byte*>(base_) + slot_bytes(fifo_bytes_) * size_t(from), fifo_bytes_, false);
}

Status ShmLink::status() const {
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
