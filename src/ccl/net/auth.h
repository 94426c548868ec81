// Proof that a connection belongs to the job: mutual challenge–response over a per-job
// secret (HMAC-SHA256), on every connection, bootstrap and data alike. The secret
// never crosses the wire; a replayed handshake fails because both sides add fresh nonces.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

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

// Both ends call this right after connecting; `initiator` is true on the connecting
// side. `purpose` binds the proof to one use ("bootstrap", "data/3/5"), so a proof for
// one connection is worthless on another. Error: the peer does not hold the secret,
// spoke something else, or said nothing before the deadline; close the socket.
Status authenticate(int fd, const Secret& secret, bool initiator, std::string_view purpose,
                    Clock::time_point deadline);

}  // namespace xm::ccl::net
