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

Status authenticate(int fd, const Secret& secret, bool initiator, std::string_view purpose,
                    Clock::time_point deadline) {
  uint8_t mine[sizeof kMagic + kNonce], theirs[sizeof kMagic + kNonce];
  std::memcpy(mine, kMagic, sizeof kMagic);
  if (RAND_bytes(mine + sizeof kMagic, kNonce) != 1) return Error{"no randomness for a nonce"};
  if (Status st = send_all(fd, mine, sizeof mine, deadline); !st) return st;
  if (Status st = recv_all(fd, theirs, sizeof theirs, deadline); !st) return st;
  if (std::memcmp(theirs, kMagic, sizeof kMagic) != 0) return Error{"peer does not speak the xccl handshake"};
  const uint8_t *my_nonce = mine + sizeof kMagic, *their_nonce = theirs + sizeof kMagic;
  char me = initiator ? 'I' : 'A', peer = initiator ? 'A' : 'I';
  auto my_proof = proof(secret, purpose, me, my_nonce, their_nonce);
  if (Status st = send_all(fd, my_proof.data(), kProof, deadline); !st) return st;
  std::array<uint8_t, kProof> got{};
  if (Status st = recv_all(fd, got.data(), kProof, deadline); !st) return st;
  auto want = proof(secret, purpose, peer, their_nonce, my_nonce);
  if (CRYPTO_memcmp(got.data(), want.data(), kProof) != 0) return Error{"peer does not hold the job secret"};
  return Status::Ok();
}

}  // namespace xm::ccl::net
