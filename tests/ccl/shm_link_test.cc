// ShmLink's framing: data frames written by send_some and written in place by
// reserve/commit (with skip frames at the FIFO's end), mixed at random, arrive as the
// same byte stream, over a FIFO small enough to wrap hundreds of times.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include <atomic>
#include <cstring>
#include <string>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ccl/shm/cross_memory.h"
#include "ccl/shm/registered_memory.h"
#include "ccl/shm/shm_transport.h"

namespace xm::ccl {
namespace {

// Two ends of a link in this process ("the peer" is this process too), over FIFOs of 16
// KiB, small enough to wrap hundreds of times; `a` may send by reference when `pulls`.
struct LinkPair {
  static constexpr size_t kFifo = 16 << 10;
  explicit LinkPair(bool pulls)
      : a_to_b(kFifoHeader + kFifo), b_to_a(kFifoHeader + kFifo), ab(a_to_b.data(), kFifo, true),
        ba(b_to_a.data(), kFifo, true), a(ab, ba, getpid(), pulls), b(ba, ab, getpid()) {}
  std::vector<std::byte> a_to_b, b_to_a;
  ByteFifo ab, ba;
  ShmLink a, b;
};

TEST(ShmLink, InPlaceAndCopiedFramesKeepTheStreamIntact) {
  LinkPair pair(false);
  ShmLink &a = pair.a, &b = pair.b;

  std::mt19937 rng(7);
  std::vector<std::byte> sent, received;
  size_t offered = 0;
  const size_t total = 4 << 20;
  while (sent.size() < total || received.size() < sent.size()) {
    // The writer: one message of a random size (odd ones too), by copy or in place.
    if (offered == sent.size() && sent.size() < total) {
      size_t bytes = std::uniform_int_distribution<size_t>(1, 9000)(rng);
      for (size_t i = 0; i < bytes; ++i) sent.push_back(std::byte(rng()));
    }
    if (offered < sent.size()) {
      size_t left = sent.size() - offered;
      if (rng() % 2) {
        offered += a.send_some(sent.data() + offered, left);
      } else if (std::span<std::byte> room = a.reserve(left); !room.empty()) {
        size_t n = std::min(room.size(), left);
        if (n < left) n &= ~size_t{7};
        std::memcpy(room.data(), sent.data() + offered, n);
        a.commit(n);
        offered += n;
      }
    }
    // The reader: takes a random part of what is readable.
    std::span<const std::byte> in = b.readable();
    if (!in.empty()) {
      size_t n = std::uniform_int_distribution<size_t>(1, in.size())(rng);
      received.insert(received.end(), in.begin(), in.begin() + n);
      b.consume(n);
    }
    ASSERT_TRUE(b.status().ok()) << b.status().message();
  }
  ASSERT_EQ(received.size(), sent.size());
  EXPECT_TRUE(received == sent);
}

// The same with the writer and the reader on two threads, as two ranks run.
TEST(ShmLink, InPlaceAndCopiedFramesAcrossThreads) {
  LinkPair pair(false);
  ShmLink &a = pair.a, &b = pair.b;
  const size_t total = 8 << 20;
  std::vector<std::byte> sent(total);
  std::mt19937 rng(11);
  for (auto& x : sent) x = std::byte(rng());
  std::atomic<bool> stop{false};
  std::thread writer([&] {
    std::mt19937 r(3);
    size_t offered = 0;
    while (offered < total && !stop) {
      size_t left = std::min<size_t>(total - offered, std::uniform_int_distribution<size_t>(1, 9000)(r));
      size_t end = offered + left;
      while (offered < end && !stop) {
        if (r() % 2) {
          offered += a.send_some(sent.data() + offered, end - offered);
        } else if (std::span<std::byte> room = a.reserve(end - offered); !room.empty()) {
          size_t n = std::min(room.size(), end - offered);
          if (n < end - offered) n &= ~size_t{7};
          std::memcpy(room.data(), sent.data() + offered, n);
          a.commit(n);
          offered += n;
        }
      }
    }
  });
  std::vector<std::byte> received;
  received.reserve(total);
  std::mt19937 r(5);
  std::string failure;
  while (received.size() < total) {
    std::span<const std::byte> in = b.readable();
    if (!b.status().ok()) {
      failure = b.status().message() + " after " + std::to_string(received.size()) + " bytes";
      break;
    }
    if (in.empty()) continue;
    size_t n = std::uniform_int_distribution<size_t>(1, in.size())(r);
    received.insert(received.end(), in.begin(), in.begin() + n);
    b.consume(n);
  }
  stop = true;
  writer.join();
  ASSERT_EQ(failure, "");
  EXPECT_TRUE(received == sent);
}

// Pulled sends (the receiver copies them out of the sender itself, by cross-memory
// attach; here the "peer" is this process) mixed with copied frames arrive as one
// stream, whether the reader takes them straight into place (receive_into) or through
// a view (readable, as reductions do); a pulled send completes once it was read.
TEST(ShmLink, PulledSendsArriveIntactByEitherReadingPath) {
  LinkPair pair(true);
  ShmLink &a = pair.a, &b = pair.b;
  std::mt19937 rng(13);
  const size_t total = 16 << 20;
  std::vector<std::byte> sent(total), received(total);
  for (auto& x : sent) x = std::byte(rng());
  size_t offered = 0, got = 0, end = 0, pulled = 0;
  bool pull = false;
  while (got < total) {
    if (offered == end && end < total) {  // the next message: large ones pulled, small ones copied
      pull = rng() % 2;
      size_t bytes = pull ? std::uniform_int_distribution<size_t>(kPullMinBytes, 600000)(rng)
                          : std::uniform_int_distribution<size_t>(1, 9000)(rng);
      end = std::min(total, offered + bytes);
      pulled += pull ? end - offered : 0;
    }
    if (offered < end) offered += pull ? a.send_pulled(sent.data() + offered, end - offered)
                                       : a.send_some(sent.data() + offered, end - offered);
    if (rng() % 2) {
      got += b.receive_into(received.data() + got, std::uniform_int_distribution<size_t>(1, total - got)(rng));
    } else if (std::span<const std::byte> in = b.readable(); !in.empty()) {
      size_t n = std::min(std::uniform_int_distribution<size_t>(1, in.size())(rng), total - got);
      std::memcpy(received.data() + got, in.data(), n);
      b.consume(n);
      got += n;
    }
    ASSERT_TRUE(b.status().ok()) << b.status().message();
  }
  while (offered < total) offered += a.send_pulled(sent.data() + offered, total - offered);  // the last acks
  EXPECT_GT(pulled, total / 4);
  EXPECT_TRUE(received == sent);
}

// A copying receiver polls receive_into, then readable() when it got nothing. A pulled
// send that lands between the two is left for its next receive_into — one copy, into
// place — not copied through a staging piece for readable() (two copies, and the first
// one faulted the staging in: a 6 us all-gather call took 100 us).
TEST(ShmLink, APulledSendArrivingBetweenTheTwoPollsGoesStraightIntoPlace) {
  LinkPair pair(true);
  ShmLink &a = pair.a, &b = pair.b;
  const size_t bytes = 256 << 10;
  std::vector<std::byte> sent(bytes), received(bytes);
  for (size_t i = 0; i < bytes; ++i) sent[i] = std::byte(i * 7 + 1);
  EXPECT_EQ(b.receive_into(received.data(), bytes), 0u);  // nothing yet
  EXPECT_EQ(a.send_pulled(sent.data(), bytes), 0u);       // posted by descriptor
  EXPECT_TRUE(b.readable().empty());
  EXPECT_EQ(b.receive_into(received.data(), bytes), bytes);
  EXPECT_TRUE(received == sent);
  EXPECT_EQ(a.send_pulled(sent.data(), bytes), bytes);  // read: the send completes
  // A reader that only views (a reduction) still gets the bytes through readable().
  EXPECT_EQ(a.send_pulled(sent.data(), bytes), 0u);
  std::span<const std::byte> in = b.readable();
  ASSERT_FALSE(in.empty());
  EXPECT_EQ(std::memcmp(in.data(), sent.data(), in.size()), 0);
}

// A descriptor of memory the sender cannot read fails the link with the reason; it
// never crashes the reader or hands it garbage.
TEST(ShmLink, APulledSendOfUnmappedMemoryFailsTheLink) {
  LinkPair pair(true);
  ShmLink &a = pair.a, &b = pair.b;
  const size_t bytes = 1 << 20;
  std::vector<std::byte> dst(bytes);
  // Reserved but inaccessible, and kept so for the test: nothing else can land there.
  void* gone = ::mmap(nullptr, bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gone, MAP_FAILED);
  EXPECT_EQ(a.send_pulled(static_cast<std::byte*>(gone), bytes), 0u);  // posted
  EXPECT_EQ(b.receive_into(dst.data(), bytes), 0u);
  EXPECT_FALSE(b.status().ok());
  EXPECT_NE(b.status().message().find("cross-memory read from the peer"), std::string::npos) << b.status().message();
  EXPECT_TRUE(b.readable().empty());
  ::munmap(gone, bytes);
}

// The FIFO's byte count lives in shared memory, written by the peer: a count past what
// the FIFO holds fails the link with the reason, at a frame's start and inside one,
// instead of handing out stale bytes.
TEST(ShmLink, AByteCountPastTheFifoFailsTheLink) {
  for (bool mid_frame : {false, true}) {
    LinkPair pair(false);
    ShmLink &a = pair.a, &b = pair.b;
    std::vector<std::byte> data(1000, std::byte{7});
    ASSERT_EQ(a.send_some(data.data(), data.size()), data.size());
    if (mid_frame) {
      std::span<const std::byte> in = b.readable();
      ASSERT_FALSE(in.empty());
      b.consume(10);
    }
    auto* header = static_cast<FifoHeader*>(static_cast<void*>(pair.a_to_b.data()));
    header->head.store(header->tail.load() + LinkPair::kFifo + 64);
    EXPECT_TRUE(b.readable().empty()) << (mid_frame ? "inside a frame" : "at a frame's start");
    EXPECT_FALSE(b.status().ok());
    EXPECT_NE(b.status().message().find("corrupt FIFO"), std::string::npos) << b.status().message();
  }
}

// A rank reads a peer's memory only once it has proved it can: a live child can be
// read (a parent may, under any ptrace policy), a process that is gone cannot.
TEST(CrossMemory, ProbesALivePeerAndNotADeadOne) {
  int ready[2], done[2];
  ASSERT_EQ(::pipe(ready), 0);
  ASSERT_EQ(::pipe(done), 0);
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    allow_cross_memory_reads();
    char c = 1;
    (void)!::write(ready[1], &c, 1);
    (void)!::read(done[0], &c, 1);
    ::_exit(0);
  }
  char c;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  // Same binary, no address randomisation between a parent and its fork: the child's
  // probe word is at this process's address.
  EXPECT_TRUE(can_read_memory_of(child, cross_memory_probe_address()));
  EXPECT_FALSE(can_read_memory_of(child, cross_memory_probe_address() + 8)) << "not the probe word";
  uint64_t word = 0;
  EXPECT_FALSE(read_memory_of(child, 8, &word, sizeof word).ok()) << "page zero is never mapped";
  (void)!::write(done[1], &c, 1);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  EXPECT_FALSE(can_read_memory_of(child, cross_memory_probe_address()));
  for (int fd : {ready[0], ready[1], done[0], done[1]}) ::close(fd);
}

// A killed rank cannot free its registered memory: the next process to register removes
// it, and leaves alone what live processes (this one) still use.
TEST(RegisteredMemory, WhatADeadProcessLeftIsRemovedWhatALiveOneUsesStays) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);  // now a pid nobody has
  auto object = [](pid_t owner, unsigned tag) {
    char name[48];
    std::snprintf(name, sizeof name, "/xccl-mem-%08x%08x", unsigned(owner), tag);
    return std::string(name);
  };
  const std::string dead = object(child, 0x5eed0001), alive = object(::getpid(), 0x5eed0002);
  for (const std::string& name : {dead, alive}) {
    int fd = ::shm_open(name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    ASSERT_GE(fd, 0) << name;
    ::close(fd);
  }
  Result<void*> mine = registered_alloc(4096);
  ASSERT_TRUE(mine.ok());
  EXPECT_GE(remove_stale_registered_memory(), 0);  // registered_alloc may have swept already
  EXPECT_FALSE(std::filesystem::exists("/dev/shm" + dead)) << "left by a dead process";
  EXPECT_TRUE(std::filesystem::exists("/dev/shm" + alive)) << "its owner lives";
  ASSERT_TRUE(registered_lookup(*mine, 4096).has_value());
  char own[48];
  std::snprintf(own, sizeof own, "/dev/shm/xccl-mem-%016llx", static_cast<unsigned long long>(registered_lookup(*mine, 1)->id));
  EXPECT_TRUE(std::filesystem::exists(own)) << "a live allocation";
  EXPECT_EQ(registered_lookup(*mine, 1)->id >> 32, uint64_t(::getpid()));
  EXPECT_TRUE(registered_free(*mine).ok());
  ::shm_unlink(alive.c_str());
}

// The host's FIFOs together stay within 8 MiB: 2 ranks keep 4 MiB FIFOs, more ranks
// get smaller ones, never below 256 KiB; always a power of two the ranks agree on.
TEST(ShmSegment, DefaultFifoShrinksAsLocalRanksGrow) {
  EXPECT_EQ(default_fifo_bytes(1), 4u << 20);
  EXPECT_EQ(default_fifo_bytes(2), 4u << 20);
  EXPECT_EQ(default_fifo_bytes(3), 1u << 20);
  EXPECT_EQ(default_fifo_bytes(4), 512u << 10);
  EXPECT_EQ(default_fifo_bytes(5), 256u << 10);
  EXPECT_EQ(default_fifo_bytes(64), 256u << 10);
  for (int n = 2; n <= 8; ++n) {
    size_t f = default_fifo_bytes(n);
    EXPECT_EQ(f & (f - 1), 0u) << n;
    EXPECT_TRUE(f * size_t(n) * size_t(n - 1) <= (8u << 20) || f == (256u << 10)) << n;
  }
}

}  // namespace
}  // namespace xm::ccl
