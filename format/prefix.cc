#include "auxstore/prefix.h"

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

#include <cstring>

#include "format/byte_order.h"
#include "format/namespace_spec.h"

namespace auxstore {

using internal::AppendLE32;
using internal::AppendLE64;

namespace {

constexpr uint32_t kBf16DType = 1;  // the only dtype stored today
constexpr uint32_t kQsaFormatVersion = 1;
constexpr uint32_t kDsaFormatVersion = 1;

void StoreCanonical(const XXH128_hash_t& h, uint8_t out[16]) {
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(&c, h);
  std::memcpy(out, c.digest, 16);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string Prefix::ToHex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(32);
  for (uint8_t b : bytes) {
    s.push_back(kDigits[b >> 4]);
    s.push_back(kDigits[b & 15]);
  }
  return s;
}

Result<Prefix> Prefix::FromHex(std::string_view hex) {
  if (hex.size() != 32) {
    return Status::InvalidArgument("a prefix is 32 hex digits, got " + std::to_string(hex.size()) +
                                   " characters");
  }
  Prefix p;
  for (size_t i = 0; i < 16; ++i) {
    const int hi = HexValue(hex[2 * i]), lo = HexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Status::InvalidArgument("prefix '" + std::string(hex) + "' is not hexadecimal");
    }
    p.bytes[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return p;
}

NamespaceId NamespaceFingerprint(const NamespaceSpec& spec) {
  std::string s = "auxstore.namespace.v1";
  AppendLE32(&s, static_cast<uint32_t>(spec.model_id.size()));
  s += spec.model_id;
  AppendLE32(&s, kBf16DType);
  AppendLE32(&s, kQsaFormatVersion);
  AppendLE32(&s, kDsaFormatVersion);
  internal::AppendQsaGeometry(&s, spec.qsa);
  AppendLE32(&s, spec.dsa.index_head_dim);
  // dsa.capacity is deliberately left out: it is a per-deployment reservation
  // (seed 001: a restore into a larger state is fine), not part of the layout.
  // The identity fields are appended only when set, so every namespace
  // registered before they existed keeps its id.
  if (internal::HasIdentityFields(spec)) {
    s += "|identity.v1";
    internal::AppendIdentityFields(&s, spec);
  }
  return XXH3_64bits(s.data(), s.size());
}

std::vector<Prefix> PrefixHashes(std::span<const uint32_t> tokens, uint32_t block_size,
                                 uint64_t salt) {
  std::vector<Prefix> out;
  if (block_size == 0) return out;
  const size_t blocks = tokens.size() / block_size;
  // No complete block: return before sizing `buf` by block_size, which may be
  // up to 2^32 - 1 tokens (16 GiB) regardless of how few tokens were passed.
  if (blocks == 0) return out;
  out.reserve(blocks);
  std::vector<uint8_t> buf(16 + size_t{block_size} * 4);
  uint8_t prev[16];
  internal::PutLE64(prev, salt);  // h_{-1}: the salt, so even block 0 is chained to it
  internal::PutLE64(prev + 8, 0);
  for (size_t b = 0; b < blocks; ++b) {
    std::memcpy(buf.data(), prev, 16);
    for (uint32_t i = 0; i < block_size; ++i) {
      internal::PutLE32(buf.data() + 16 + 4 * i, tokens[b * block_size + i]);
    }
    StoreCanonical(XXH3_128bits_withSeed(buf.data(), buf.size(), salt), prev);
    Prefix p;
    std::memcpy(p.bytes.data(), prev, 16);
    out.push_back(p);
  }
  return out;
}

TokenDigest DigestTokens(std::span<const uint32_t> tokens, uint64_t salt) {
  // A keyed, non-chained construction: a custom secret derived from the salt
  // (not a seed), the whole sequence in one pass, and the length appended.
  uint8_t secret[XXH3_SECRET_SIZE_MIN * 2];
  const std::string label = "auxstore.token-digest.v1";
  XXH3_generateSecret(secret, sizeof secret, label.data(), label.size());
  for (size_t i = 0; i < sizeof secret; ++i)
    secret[i] ^= static_cast<uint8_t>(salt >> (8 * (i % 8)));
  XXH3_state_t* st = XXH3_createState();
  XXH3_128bits_reset_withSecret(st, secret, sizeof secret);
  std::string le;
  le.reserve(tokens.size() * 4 + 8);
  for (uint32_t t : tokens) AppendLE32(&le, t);
  AppendLE64(&le, tokens.size());
  XXH3_128bits_update(st, le.data(), le.size());
  TokenDigest d;
  StoreCanonical(XXH3_128bits_digest(st), d.bytes.data());
  XXH3_freeState(st);
  return d;
}

}  // namespace auxstore
