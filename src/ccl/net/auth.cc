#include "ccl/net/auth.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace xm::ccl::net {
namespace {

constexpr char kMagic[16] = "XCCL-AUTH-v1";
constexpr size_t kNonce = 32, kProof = 32;

std::array<uint8_t, kProof> proof(const Secret& s, std::string_view purpose, char role, const uint8_t* first,
                                  const uint8_t* second) {
  std::string msg(purpose);
  msg += '\0';
  msg += role;
  msg.append(reinterpret_cast<const char*>(first), kNonce);
  msg.append(reinterpret_cast<const char*>(second), kNonce);
  std::array<uint8_t, kProof> out{};
  unsigned len = 0;
  HMAC(EVP_sha256(), s.bytes.data(), int(s.bytes.size()), reinterpret_cast<const uint8_t*>(msg.data()), msg.size(),
       out.data(), &len);
  return out;
}

}  // namespace

Secret random_secret() {
  Secret s;
  if (RAND_bytes(s.bytes.data(), int(s.bytes.size())) != 1) std::abort();  // no entropy: nothing is safe
  return s;
}

std::string to_hex(const Secret& s) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : s.bytes) out += digits[b >> 4], out += digits[b & 15];
  return out;
}

Result<Secret> secret_from_hex(std::string_view hex) {
  Secret s;
  if (hex.size() != 2 * s.bytes.size()) return Error{"a job secret is 64 hex digits"};
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.bytes.size(); ++i) {
    int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error{"a job secret is 64 hex digits"};
    s.bytes[i] = uint8_t(hi << 4 | lo);
  }
  return s;
}

Handshake::Handshake(const Secret& secret, bool initiator, std::string purpose)
    : secret_(secret), initiator_(initiator), purpose_(std::move(purpose)) {
  static_assert(sizeof kMagic == kMagicBytes && kNonce == kNonceBytes && kProof == kProofBytes);
  std::memcpy(mine_.data(), kMagic, sizeof kMagic);
  if (RAND_bytes(mine_.data() + sizeof kMagic, kNonce) != 1) std::abort();  // no entropy: nothing is safe
  out_.assign(mine_.begin(), mine_.end());
}

size_t Handshake::wanted() const {
  switch (stage_) {
    case Stage::kNonce: return theirs_.size() - have_;
    case Stage::kProof: return their_proof_.size() - have_;
    default: return 0;
  }
}

Status Handshake::feed(std::span<const uint8_t> bytes) {
  if (stage_ == Stage::kFailed) return Error{"handshake already failed"};
  if (bytes.size() > wanted()) {
    stage_ = Stage::kFailed;
    return Error{"peer sent more than the handshake holds"};
  }
  uint8_t* into = stage_ == Stage::kNonce ? theirs_.data() : their_proof_.data();
  std::memcpy(into + have_, bytes.data(), bytes.size());
  have_ += bytes.size();
  if (wanted() > 0) return Status::Ok();
  have_ = 0;
  const uint8_t *my_nonce = mine_.data() + sizeof kMagic, *their_nonce = theirs_.data() + sizeof kMagic;
  char me = initiator_ ? 'I' : 'A', peer = initiator_ ? 'A' : 'I';
  auto prove = [&] {
    auto mine = proof(secret_, purpose_, me, my_nonce, their_nonce);
    out_.insert(out_.end(), mine.begin(), mine.end());
  };
  if (stage_ == Stage::kNonce) {
    if (std::memcmp(theirs_.data(), kMagic, sizeof kMagic) != 0) {
      stage_ = Stage::kFailed;
      return Error{"peer does not speak the xccl handshake"};
    }
    if (initiator_) prove();
    stage_ = Stage::kProof;
    return Status::Ok();
  }
  auto want = proof(secret_, purpose_, peer, their_nonce, my_nonce);
  if (CRYPTO_memcmp(their_proof_.data(), want.data(), kProof) != 0) {
    stage_ = Stage::kFailed;
    if (initiator_) {
      const std::array<uint8_t, kProof> refusal{};
      if (their_proof_ == refusal) return Error{"peer refused our proof: it does not hold the same job secret"};
    } else {
      out_.insert(out_.end(), kProof, 0);  // the refusal: said so the initiator does not try again
    }
    return Error{"peer does not hold the job secret"};
  }
  // The acceptor proves itself last, once it has accepted: an initiator that holds its proof
  // knows the connection is taken, never one the acceptor has already dropped.
  if (!initiator_) prove();
  stage_ = Stage::kDone;
  return Status::Ok();
}

HandshakeIo pump(int fd, Handshake& h, std::string* why) {
  auto blocked = [] { return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR; };
  auto broken = [&](const char* what) {
    *why = std::string(what) + ": " + std::strerror(errno);
    return HandshakeIo::kBroken;
  };
  while (true) {
    for (std::span<const uint8_t> out; !(out = h.output()).empty();) {
      ssize_t n = ::send(fd, out.data(), out.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) return blocked() ? HandshakeIo::kWaiting : broken("send");
      h.wrote(size_t(n));
    }
    if (h.done()) return HandshakeIo::kDone;
    uint8_t buffer[64];
    ssize_t n = ::recv(fd, buffer, std::min(h.wanted(), sizeof buffer), MSG_DONTWAIT);
    if (n == 0) {
      *why = "closed the connection";
      return HandshakeIo::kBroken;
    }
    if (n < 0) return blocked() ? HandshakeIo::kWaiting : broken("recv");
    if (Status st = h.feed({buffer, size_t(n)}); !st) {
      std::span<const uint8_t> last = h.output();  // the refusal, if any: the socket closes next
      (void)!::send(fd, last.data(), last.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      *why = st.message();
      return HandshakeIo::kRefused;
    }
  }
}

Status authenticate(int fd, const Secret& secret, bool initiator, std::string_view purpose,
                    Clock::time_point deadline) {
  Handshake h(secret, initiator, std::string(purpose));
  std::string why;
  while (true) {
    switch (pump(fd, h, &why)) {
      case HandshakeIo::kDone: return Status::Ok();
      case HandshakeIo::kBroken:
      case HandshakeIo::kRefused: return Error{why};
      case HandshakeIo::kWaiting: break;
    }
    if (Status st = wait_for(fd, h.output().empty() ? POLLIN : POLLOUT, deadline, "handshake"); !st) return st;
  }
}

}  // namespace xm::ccl::net
