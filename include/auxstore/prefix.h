// 128-bit prefix keys, namespace ids, and the helpers that compute them.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "auxstore/geometry.h"
#include "auxstore/status.h"

namespace auxstore {

// A prefix key: 128 bits, opaque to the store (usually the engine's own
// prefix hash). Byte order is the caller's.
struct Prefix {
  std::array<uint8_t, 16> bytes{};

  friend bool operator==(const Prefix&, const Prefix&) = default;
  friend auto operator<=>(const Prefix&, const Prefix&) = default;

  std::string ToHex() const;
  static Result<Prefix> FromHex(std::string_view hex);  // 32 hex digits
};

// A namespace id: the fingerprint of a model identity and its geometry.
using NamespaceId = uint64_t;

// Stable 64-bit fingerprint of `spec` plus dtype (bf16) and the QSA/DSA
// format versions: XXH3-64 of an explicit little-endian serialization (floats
// by bit pattern), identical across processes, builds and machines.
NamespaceId NamespaceFingerprint(const NamespaceSpec& spec);

// Chained block hashes of `tokens`: h_0 = XXH3-128(salt ‖ block 0), h_i =
// XXH3-128(h_{i-1} ‖ block i), tokens as u32 little-endian, seeded with
// `salt`. One prefix per complete block (a trailing partial block has none),
// ordered shortest to longest. Empty when block_size is 0.
std::vector<Prefix> PrefixHashes(std::span<const uint32_t> tokens, uint32_t block_size,
                                 uint64_t salt);

// A digest of the exact token sequence, independent of the chained prefix
// hash (a different hash construction over the whole sequence and its length,
// keyed with a salt-derived secret). Stored in the manifest and checked on
// lookup so two token sequences whose prefix hashes collide never share a
// snapshot.
struct TokenDigest {
  std::array<uint8_t, 16> bytes{};
  friend bool operator==(const TokenDigest&, const TokenDigest&) = default;
};
TokenDigest DigestTokens(std::span<const uint32_t> tokens, uint64_t salt);

}  // namespace auxstore
