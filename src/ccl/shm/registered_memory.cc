#include "ccl/shm/registered_memory.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <shared_mutex>
#include <string>

#include "ccl/net/auth.h"

namespace xm::ccl {
namespace {

constexpr const char* kPrefix = "xccl-mem-";

std::string name_of(uint64_t id) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "/%s%016llx", kPrefix, static_cast<unsigned long long>(id));
  return buf;
}

struct Allocation {
  uint64_t id;
  size_t size;
};

// This process's allocations by base address. Names are unlinked at free and, for
// whatever is still allocated, at exit.
struct Registry {
  std::shared_mutex mu;
  std::map<uintptr_t, Allocation> by_base;
  ~Registry() {
    for (auto& [base, a] : by_base) shm_unlink(name_of(a.id).c_str());
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

int remove_stale_registered_memory() {
  DIR* dir = ::opendir("/dev/shm");
  if (!dir) return 0;
  int removed = 0;
  const size_t prefix = std::strlen(kPrefix);
  while (dirent* e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name.size() != prefix + 16 || name.compare(0, prefix, kPrefix) != 0) continue;
    char* end = nullptr;
    unsigned long long id = std::strtoull(name.c_str() + prefix, &end, 16);
    pid_t owner = pid_t(id >> 32);
    struct stat st {};
    if (*end || owner <= 0 || ::fstatat(::dirfd(dir), e->d_name, &st, 0) != 0 || st.st_uid != ::geteuid()) continue;
    if (::kill(owner, 0) != 0 && errno == ESRCH && ::shm_unlink(("/" + name).c_str()) == 0) ++removed;
  }
  ::closedir(dir);
  return removed;
}

Result<void*> registered_alloc(size_t bytes) {
  if (bytes == 0) return Error{"cannot register 0 bytes"};
  static std::once_flag swept;
  std::call_once(swept, [] { remove_stale_registered_memory(); });
  // The owner's pid above 32 unguessable bits.
  uint32_t random = 0;
  net::Secret secret = net::random_secret();
  std::memcpy(&random, secret.bytes.data(), sizeof random);
  const uint64_t id = uint64_t(uint32_t(::getpid())) << 32 | random;
  std::string name = name_of(id);
  int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  if (fd < 0) return Error{"shm_open " + name + ": " + std::strerror(errno)};
  if (::ftruncate(fd, off_t(bytes)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return Error{"registering " + std::to_string(bytes) + " bytes: " + std::strerror(err)};
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) {
    ::shm_unlink(name.c_str());
    return Error{"mmap " + name + ": " + std::strerror(errno)};
  }
  std::unique_lock lock(registry().mu);
  registry().by_base[reinterpret_cast<uintptr_t>(p)] = {id, bytes};
  return p;
}

Status registered_free(void* ptr) {
  std::unique_lock lock(registry().mu);
  auto it = registry().by_base.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == registry().by_base.end()) return Error{"not a pointer from xcclMemAlloc"};
  ::munmap(ptr, it->second.size);
  ::shm_unlink(name_of(it->second.id).c_str());
  registry().by_base.erase(it);
  return Status::Ok();
}

std::optional<RegisteredSpan> registered_lookup(const void* p, size_t bytes) {
  uintptr_t at = reinterpret_cast<uintptr_t>(p);
  std::shared_lock lock(registry().mu);
  auto it = registry().by_base.upper_bound(at);
  if (it == registry().by_base.begin()) return std::nullopt;
  --it;
  uintptr_t base = it->first;
  if (at + bytes > base + it->second.size) return std::nullopt;
  return RegisteredSpan{it->second.id, at - base};
}

RegisteredScratch::~RegisteredScratch() {
  if (base_) (void)registered_free(base_);
}

Result<std::byte*> RegisteredScratch::reserve(size_t bytes) {
  if (base_ && bytes <= size_) return static_cast<std::byte*>(base_);
  size_t size = std::max<size_t>(size_ * 2, 64 << 10);
  while (size < bytes) size *= 2;
  Result<void*> p = registered_alloc(size);
  if (!p) return p.error();
  if (base_) (void)registered_free(base_);
  base_ = *p, size_ = size;
  return static_cast<std::byte*>(base_);
}

PeerMemory::~PeerMemory() {
  for (auto& [id, m] : mappings_) ::munmap(const_cast<std::byte*>(m.base), m.size);
}

Result<const std::byte*> PeerMemory::map(uint64_t id, uint64_t offset, uint64_t bytes) {
  auto it = mappings_.find(id);
  if (it == mappings_.end()) {
    std::string name = name_of(id);
    int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
    if (fd < 0) return Error{"peer buffer " + name + ": " + std::strerror(errno)};
    struct stat st {};
    ::fstat(fd, &st);
    void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    if (p == MAP_FAILED) return Error{"mmap peer buffer " + name + ": " + std::strerror(errno)};
    it = mappings_.emplace(id, Mapping{static_cast<const std::byte*>(p), size_t(st.st_size)}).first;
  }
  if (offset > it->second.size || bytes > it->second.size - offset)
    return Error{"peer described bytes outside its registered buffer"};
  return it->second.base + offset;
}

}  // namespace xm::ccl
