#include "ccl/net/auth.h"

#include <openssl/crypto.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

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

Status authenticate(int fd, const Secret& secret, bool initiator, std::string_view purpose,
                    Clock::time_point deadline) {
  Handshake h(secret, initiator, std::string(purpose));
  uint8_t buffer[64];
  while (!h.done()) {
    std::span<const uint8_t> out = h.output();
    if (!out.empty()) {
      if (Status st = send_all(fd, out.data(), out.size(), deadline); !st) return st;
      h.wrote(out.size());
    }
    if (size_t want = h.wanted(); want > 0) {
      if (Status st = recv_all(fd, buffer, want, deadline); !st) return st;
      if (Status st = h.feed({buffer, want}); !st) return st;
    }
  }
  return Status::Ok();
}

}  // namespace xm::ccl::net
