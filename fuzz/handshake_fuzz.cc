// libFuzzer harness for the connection handshake (net::Handshake, what every bootstrap and
// data connection runs before anything else).
//
// The input is a list of edits to an honest transcript: each 3-byte record (position,
// xor mask, chunk length) flips bits in one byte the initiator sends and decides how the
// bytes are cut into reads. Invariants: an untouched transcript (every mask 0 or every
// position past the end) proves both sides, however it is chunked; a transcript with any
// byte changed (edits that cancel out change nothing) never lets the acceptor finish;
// nothing crashes or reads past a buffer.
// A second pass feeds the raw input to an acceptor as a stranger would: it must never
// finish (the stranger cannot know the secret).
//
//   cmake --preset asan && cmake --build --preset asan
//   build/asan/fuzz/handshake_fuzz -max_total_time=600 fuzz/handshake_corpus
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "ccl/net/auth.h"

namespace {

using xm::ccl::net::Handshake;
using xm::ccl::net::Secret;

void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "handshake_fuzz: invariant broken: %s\n", what);
    std::abort();
  }
}

const Secret& secret() {
  static const Secret s = [] {
    Secret x;
    for (size_t i = 0; i < x.bytes.size(); ++i) x.bytes[i] = uint8_t(i * 37 + 11);
    return x;
  }();
  return s;
}

struct Edit {
  size_t position;
  uint8_t mask;
  size_t chunk;
};

// Runs an honest initiator against an acceptor with `edits` applied to what the initiator
// sends. Returns whether any sent byte was actually changed.
bool run_edited(const std::vector<Edit>& edits) {
  Handshake initiator(secret(), true, "data/0/1/0"), acceptor(secret(), false, "data/0/1/0");
  size_t sent_offset = 0, edit_chunk = 0;
  bool changed = false, failed = false;
  for (int round = 0; round < 200 && !failed; ++round) {
    bool moved = false;
    // initiator -> acceptor, edited
    while (!failed) {
      std::span<const uint8_t> out = initiator.output();
      size_t room = acceptor.wanted();
      if (out.empty() || room == 0) break;
      size_t chunk = edits.empty() ? out.size() : std::max<size_t>(1, edits[edit_chunk++ % edits.size()].chunk);
      size_t n = std::min({out.size(), room, chunk});
      std::vector<uint8_t> bytes(out.begin(), out.begin() + n);
      for (const Edit& e : edits)
        if (e.position >= sent_offset && e.position < sent_offset + n) bytes[e.position - sent_offset] ^= e.mask;
      changed |= !std::equal(bytes.begin(), bytes.end(), out.begin());  // edits at one byte may cancel
      initiator.wrote(n);
      sent_offset += n;
      if (!acceptor.feed(bytes).ok()) failed = true;
      moved = true;
    }
    // acceptor -> initiator, untouched
    while (!failed) {
      std::span<const uint8_t> out = acceptor.output();
      size_t n = std::min(out.size(), initiator.wanted());
      if (n == 0) break;
      std::vector<uint8_t> bytes(out.begin(), out.begin() + n);
      acceptor.wrote(n);
      (void)initiator.feed(bytes);  // the initiator's verdict is about the acceptor, honest here
      moved = true;
    }
    if (!moved) break;
  }
  if (changed) {
    require(!acceptor.done(), "an edited transcript was accepted");
  } else {
    require(!failed, "an honest transcript was refused");
    require(acceptor.done() && initiator.done(), "an honest transcript did not finish");
  }
  return changed;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<Edit> edits;
  for (size_t i = 0; i + 3 <= size && edits.size() < 64; i += 3)
    edits.push_back({size_t(data[i] % 96), data[i + 1], size_t(data[i + 2] % 64)});
  run_edited(edits);

  // A stranger: the raw bytes, in whatever pieces the acceptor asks for.
  Handshake acceptor(secret(), false, "bootstrap/0/2");
  size_t at = 0;
  while (at < size && acceptor.wanted() > 0) {
    size_t n = std::min(acceptor.wanted(), size - at);
    if (!acceptor.feed({data + at, n}).ok()) break;
    at += n;
  }
  require(!acceptor.done(), "a stranger without the secret finished the handshake");
  return 0;
}
