// Proof that a connection belongs to the job: mutual challenge–response over a per-job
// secret (HMAC-SHA256), on every connection, bootstrap and data alike. The secret
// never crosses the wire; a replayed handshake fails because both sides add fresh nonces.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ccl/net/socket.h"
#include "util/result.h"

namespace xm::ccl::net {

struct Secret {
  std::array<uint8_t, 32> bytes{};
  bool operator==(const Secret&) const = default;
};

Secret random_secret();
std::string to_hex(const Secret& s);
Result<Secret> secret_from_hex(std::string_view hex);

// One side of the handshake as a state machine that does no I/O: it says what to write and
// how many bytes it wants next, so one thread can run many handshakes at once (net::Gate)
// and a fuzzer can feed it anything. Each side writes a magic and a nonce and reads the
// other's; the initiator then proves itself, and the acceptor, once it has checked that
// proof, proves itself back: so the initiator finishes only on a connection the acceptor
// has taken (and an acceptor gives nothing to a stranger that cannot prove itself first).
class Handshake {
 public:
  Handshake(const Secret& secret, bool initiator, std::string purpose);
  std::span<const uint8_t> output() const { return {out_.data() + written_, out_.size() - written_}; }
  void wrote(size_t bytes) { written_ += bytes; }
  // How many bytes the next read may take: 0 once the peer's proof is in, or on failure.
  size_t wanted() const;
  // Takes at most wanted() bytes read from the peer. Error: it does not speak the
  // handshake or does not hold the secret; the connection must be closed (an acceptor
  // first writes what output() still holds: its refusal, 32 zero bytes where its proof
  // would be, so an honest initiator with the wrong secret stops instead of retrying).
  Status feed(std::span<const uint8_t> bytes);
  // Proven both ways, and everything written.
  bool done() const { return stage_ == Stage::kDone && output().empty(); }

 private:
  static constexpr size_t kMagicBytes = 16, kNonceBytes = 32, kProofBytes = 32;
  enum class Stage { kNonce, kProof, kDone, kFailed };
  Secret secret_;
  bool initiator_;
  std::string purpose_;
  Stage stage_ = Stage::kNonce;
  std::array<uint8_t, kMagicBytes + kNonceBytes> mine_{}, theirs_{};
  std::array<uint8_t, kProofBytes> their_proof_{};
  size_t have_ = 0;  // bytes of the current incoming message
  std::vector<uint8_t> out_;
  size_t written_ = 0;
};

// Moves a handshake on over a non-blocking socket as far as it goes without waiting: writes
// what it has to say, reads exactly what it wants (what follows belongs to the caller).
// kBroken: the connection failed; kRefused: the proof failed, after a last best-effort
// write of what the handshake still holds (an acceptor's refusal). `why` says which.
enum class HandshakeIo { kWaiting, kDone, kBroken, kRefused };
HandshakeIo pump(int fd, Handshake& handshake, std::string* why);

// Both ends call this right after connecting; `initiator` is true on the connecting
// side. `purpose` binds the proof to one use ("bootstrap", "data/3/5"), so a proof for
// one connection is worthless on another. Error: the peer does not hold the secret,
// spoke something else, or said nothing before the deadline; close the socket.
Status authenticate(int fd, const Secret& secret, bool initiator, std::string_view purpose,
                    Clock::time_point deadline);

}  // namespace xm::ccl::net
