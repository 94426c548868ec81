// The handshake as a state machine, and the gate that runs many at once: strangers (silent,
// slow, garbage, wrong secret) are refused without delaying a legitimate peer.
#include <gtest/gtest.h>

#include <dirent.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <thread>

#include "ccl/net/gate.h"

namespace xm::ccl::net {
namespace {

// Passes bytes between two handshakes, `chunk` at a time, until neither has anything to say.
Status converse(Handshake& a, Handshake& b, size_t chunk) {
  for (int round = 0; round < 1000; ++round) {
    bool moved = false;
    for (auto [from, to] : {std::pair{&a, &b}, std::pair{&b, &a}}) {
      std::span<const uint8_t> out = from->output();
      size_t n = std::min({out.size(), to->wanted(), chunk});
      if (n == 0) continue;
      std::vector<uint8_t> bytes(out.begin(), out.begin() + n);
      from->wrote(n);
      if (Status st = to->feed(bytes); !st) return st;
      moved = true;
    }
    if (!moved) return Status::Ok();
  }
  return Error{"no end"};
}

TEST(Handshake, BothSidesProveTheSecretWhateverTheChunking) {
  Secret s = random_secret();
  for (size_t chunk : {1, 7, 48, 1000}) {
    Handshake i(s, true, "data/0/1/0"), a(s, false, "data/0/1/0");
    ASSERT_TRUE(converse(i, a, chunk).ok()) << chunk;
    EXPECT_TRUE(i.done());
    EXPECT_TRUE(a.done());
    EXPECT_EQ(i.wanted(), 0u);
  }
}

TEST(Handshake, WrongSecretPurposeOrMagicFails) {
  Secret s = random_secret();
  {
    Handshake i(random_secret(), true, "bootstrap/0/2"), a(s, false, "bootstrap/0/2");
    Status st = converse(i, a, 1000);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message().find("does not hold the job secret"), std::string::npos) << st.message();
    EXPECT_FALSE(a.done());
  }
  {
    Handshake i(s, true, "bootstrap/1/2"), a(s, false, "bootstrap/0/2");  // a proof for another claim
    EXPECT_FALSE(converse(i, a, 1000).ok());
    EXPECT_FALSE(a.done());
  }
  {
    Handshake a(s, false, "bootstrap/0/2");
    std::vector<uint8_t> junk(48, 'G');
    Status st = a.feed(junk);
    EXPECT_NE(st.message().find("does not speak the xccl handshake"), std::string::npos) << st.message();
    EXPECT_EQ(a.wanted(), 0u);
    EXPECT_FALSE(a.feed(junk).ok()) << "a failed handshake stays failed";
  }
  {
    Handshake a(s, false, "x");
    std::vector<uint8_t> too_much(49, 0);
    EXPECT_FALSE(a.feed(too_much).ok());
  }
}

size_t open_descriptors() {
  size_t n = 0;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (readdir(d)) ++n;
    closedir(d);
  }
  return n;
}

// A gate on one loopback listener whose hello is 4 bytes naming the purpose's suffix.
class GateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    listener_ = listen_on("127.0.0.1", 0, &port_).value();
  }
  Gate::Rules rules(std::chrono::milliseconds timeout, size_t max_pending = 64) {
    Gate::Rules r;
    r.hello_bytes = 4;
    r.purpose = [](size_t, std::span<const uint8_t> hello) -> Result<std::string> {
      if (std::memcmp(hello.data(), "ok", 2) != 0) return Error{"bad hello"};
      return "test/" + std::string(reinterpret_cast<const char*>(hello.data()) + 2, 2);
    };
    r.handshake_timeout = timeout;
    r.max_pending = max_pending;
    r.warn = [this](size_t, const std::string& from, const std::string& why) {
      warnings_.push_back(from + ": " + why);
    };
    return r;
  }
  Endpoint at() const { return {"127.0.0.1", port_}; }
  // A legitimate peer: hello, then the handshake.
  Status join(const char* hello, const Secret& secret, Clock::time_point deadline) {
    Result<Fd> fd = connect_to(at(), deadline);
    if (!fd) return fd.error();
    if (Status st = send_all(fd->get(), hello, 4, deadline); !st) return st;
    return authenticate(fd->get(), secret, true, std::string("test/") + (hello + 2), deadline);
  }
  Fd listener_;
  uint16_t port_ = 0;
  Secret secret_ = random_secret();
  std::vector<std::string> warnings_;
};

TEST_F(GateTest, HundredSilentConnectionsDelayNobody) {
  Gate gate({listener_.get()}, secret_, rules(std::chrono::seconds(3), 128));
  auto soon = Clock::now() + std::chrono::seconds(10);
  std::vector<Fd> silent;
  for (int i = 0; i < 100; ++i) silent.push_back(connect_to(at(), soon).value());
  std::atomic<bool> joined{false};
  std::thread peer([&] { joined = join("okAB", secret_, soon).ok(); });
  auto start = Clock::now();
  Result<Gate::Arrival> in = gate.admit(soon);
  auto waited = Clock::now() - start;
  peer.join();
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_TRUE(joined);
  EXPECT_EQ(std::string(in->hello.begin(), in->hello.end()), "okAB");
  // Admitted while every stranger was still within its time: nobody waited for them.
  EXPECT_EQ(gate.refused(), 0);
  EXPECT_EQ(gate.pending(), 100u);
  EXPECT_LT(waited, std::chrono::seconds(3));
  // At their deadline the strangers are refused, and logged once for their one address.
  EXPECT_FALSE(gate.admit(Clock::now() + std::chrono::milliseconds(3500)).ok());
  EXPECT_EQ(gate.refused(), 100);
  EXPECT_EQ(gate.pending(), 0u);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("did not send its hello within 3000 ms"), std::string::npos) << warnings_[0];
  EXPECT_NE(warnings_[0].find("counted, not logged"), std::string::npos) << warnings_[0];
}

TEST_F(GateTest, GarbageAndWrongSecretsAreRefusedAtOnce) {
  Gate gate({listener_.get()}, secret_, rules(std::chrono::seconds(30)));
  auto soon = Clock::now() + std::chrono::seconds(10);
  std::vector<Fd> strangers;
  for (int i = 0; i < 20; ++i) {
    Fd fd = connect_to(at(), soon).value();
    const char junk[] = "GET / HTTP/1.1\r\n\r\n";
    ASSERT_TRUE(send_all(fd.get(), junk, sizeof junk, soon).ok());
    strangers.push_back(std::move(fd));
  }
  std::thread impostor([&] { EXPECT_FALSE(join("okAB", random_secret(), soon).ok()); });
  std::thread honest([&] { EXPECT_TRUE(join("okCD", secret_, soon).ok()); });
  Result<Gate::Arrival> in = gate.admit(soon);
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(std::string(in->hello.begin(), in->hello.end()), "okCD");
  honest.join();
  // Everything wrong was refused on its first wrong byte, long before its 30 s. The gate
  // must go on being driven for that: the impostor may still be mid-handshake when the
  // honest peer is admitted (it then waited out its 10 s for an answer nobody read).
  for (int i = 0; i < 50 && gate.refused() < 21; ++i)
    EXPECT_FALSE(gate.admit(Clock::now() + std::chrono::milliseconds(100)).ok());
  impostor.join();
  EXPECT_EQ(gate.refused(), 21);
  EXPECT_EQ(gate.pending(), 0u);
  EXPECT_EQ(warnings_.size(), 1u) << "one address, one line";
  for (Fd& fd : strangers) {
    char c;
    EXPECT_FALSE(recv_all(fd.get(), &c, 1, soon).ok()) << "closed";
  }
}

TEST_F(GateTest, PendingHandshakesAndDescriptorsStayBounded) {
  Gate gate({listener_.get()}, secret_, rules(std::chrono::seconds(30), 16));
  auto soon = Clock::now() + std::chrono::seconds(10);
  size_t before = open_descriptors();
  std::vector<Fd> silent;
  for (int i = 0; i < 100; ++i) silent.push_back(connect_to(at(), soon).value());
  std::thread peer([&] { EXPECT_TRUE(join("okEF", secret_, soon).ok()); });
  Result<Gate::Arrival> in = gate.admit(soon);
  peer.join();
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_LE(gate.pending(), 16u);
  EXPECT_GE(gate.refused(), 100 - 16) << "the oldest were dropped to make room";
  // Our 100 client ends, plus at most 16 server ends and the admitted one.
  EXPECT_LE(open_descriptors(), before + 100 + 16 + 1);
}

TEST_F(GateTest, AnHonestPeerDroppedForRoomDialsAgain) {
  Gate gate({listener_.get()}, secret_, rules(std::chrono::seconds(30), 2));
  auto soon = Clock::now() + std::chrono::seconds(10);
  Result<Fd> dialed = Error{"not yet"};
  std::thread peer([&] { dialed = dial(at(), {reinterpret_cast<const uint8_t*>("okIJ"), 4}, secret_, "test/IJ", soon); });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the peer is first in the queue...
  std::vector<Fd> silent;
  for (int i = 0; i < 3; ++i) silent.push_back(connect_to(at(), soon).value());  // ...and pushed out by these
  Result<Gate::Arrival> in = gate.admit(soon);
  peer.join();
  ASSERT_TRUE(in.ok()) << in.error().message;
  ASSERT_TRUE(dialed.ok()) << dialed.error().message;
  EXPECT_EQ(std::string(in->hello.begin(), in->hello.end()), "okIJ");
  EXPECT_GE(gate.refused(), 2) << "the first attempt was dropped, and a stranger for the second";
  // A wrong secret is final: no retries until the deadline.
  auto start = Clock::now();
  std::thread impostor([&] {
    Result<Fd> r = dial(at(), {reinterpret_cast<const uint8_t*>("okKL"), 4}, random_secret(), "test/KL", soon);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error().message.find("refused our proof"), std::string::npos) << r.error().message;
  });
  EXPECT_FALSE(gate.admit(Clock::now() + std::chrono::milliseconds(300)).ok());
  impostor.join();
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
}

TEST_F(GateTest, ASlowButHonestPeerIsAdmittedAndASlowStrangerTimesOut) {
  Gate gate({listener_.get()}, secret_, rules(std::chrono::milliseconds(1500)));
  auto soon = Clock::now() + std::chrono::seconds(10);
  std::thread slow([&] {
    Fd fd = connect_to(at(), soon).value();
    for (char c : std::string("okGH")) {  // the hello a byte at a time
      ASSERT_TRUE(send_all(fd.get(), &c, 1, soon).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    EXPECT_TRUE(authenticate(fd.get(), secret_, true, "test/GH", soon).ok());
  });
  std::thread loris([&] {
    Fd fd = connect_to(at(), soon).value();
    for (int i = 0; i < 3; ++i) {  // three bytes of four, then nothing
      ASSERT_TRUE(send_all(fd.get(), "o", 1, soon).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    char c;
    EXPECT_FALSE(recv_all(fd.get(), &c, 1, soon).ok()) << "closed at its deadline";
  });
  Result<Gate::Arrival> in = gate.admit(soon);
  slow.join();
  ASSERT_TRUE(in.ok()) << in.error().message;
  EXPECT_EQ(std::string(in->hello.begin(), in->hello.end()), "okGH");
  EXPECT_FALSE(gate.admit(Clock::now() + std::chrono::seconds(2)).ok());
  loris.join();
  EXPECT_EQ(gate.refused(), 1);
}

}  // namespace
}  // namespace xm::ccl::net
