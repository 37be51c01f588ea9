// Prefix keys, namespace fingerprints, chained prefix hashes and token digests
// (format/prefix.cc, docs/format.md §6-8).
#include "auxstore/prefix.h"

#define XXH_STATIC_LINKING_ONLY
#include <gtest/gtest.h>
#include <xxhash.h>

#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "format/byte_order.h"
#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::ToHexString;

std::vector<uint32_t> Iota(size_t n, uint32_t start = 0) {
  std::vector<uint32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  return v;
}

std::vector<std::string> Hexes(const std::vector<Prefix>& ps) {
  std::vector<std::string> out;
  for (const Prefix& p : ps) out.push_back(p.ToHex());
  return out;
}

// ---- Prefix hex --------------------------------------------------------------------

TEST(PrefixHex, ToHexIsLowercaseInByteOrder) {
  Prefix p;
  for (int i = 0; i < 16; ++i) p.bytes[i] = static_cast<uint8_t>(i * 17);
  EXPECT_EQ(p.ToHex(), "00112233445566778899aabbccddeeff");
}

TEST(PrefixHex, FromHexInvertsToHex) {
  Prefix p;
  for (int i = 0; i < 16; ++i) p.bytes[i] = static_cast<uint8_t>(0xf0 - 7 * i);
  auto back = Prefix::FromHex(p.ToHex());
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(*back, p);
}

TEST(PrefixHex, FromHexAcceptsUppercase) {
  auto p = Prefix::FromHex("00112233445566778899AABBCCDDEEFF");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->ToHex(), "00112233445566778899aabbccddeeff");
}

TEST(PrefixHex, FromHexRejectsTheWrongLength) {
  EXPECT_ERROR(Prefix::FromHex(""), kInvalidArgument,
               "a prefix is 32 hex digits, got 0 characters");
  EXPECT_ERROR(Prefix::FromHex(std::string(31, '0')), kInvalidArgument, "got 31 characters");
  EXPECT_ERROR(Prefix::FromHex(std::string(33, '0')), kInvalidArgument, "got 33 characters");
}

TEST(PrefixHex, FromHexRejectsNonHexDigits) {
  for (char bad : {'g', 'G', ' ', '-', 'x'}) {
    std::string hex(32, '0');
    hex[31] = bad;
    EXPECT_ERROR(Prefix::FromHex(hex), kInvalidArgument, "prefix '" + hex + "' is not hexadecimal");
  }
  std::string hex(32, 'a');
  hex[0] = 'z';  // bad high nibble
  EXPECT_ERROR(Prefix::FromHex(hex), kInvalidArgument, "is not hexadecimal");
}

TEST(Prefix, OrdersLexicographicallyByBytes) {
  Prefix a, b;
  b.bytes[0] = 1;
  a.bytes[15] = 0xff;
  EXPECT_LT(a, b);
  EXPECT_EQ(a, a);
  EXPECT_NE(a, b);
}

// ---- NamespaceFingerprint -------------------------------------------------------------

NamespaceSpec FixedSpec() {
  NamespaceSpec s;
  s.model_id = "glm-5.3-next";
  s.qsa = {.hd = 128, .max_tokens = 131072, .ratio = 4, .rot = 64, .theta = 10000.0f, .eps = 1e-6f};
  s.dsa = {.index_head_dim = 128, .capacity = 65536};
  return s;
}

TEST(NamespaceFingerprint, KnownAnswerIsPinned) {
  EXPECT_EQ(NamespaceFingerprint(FixedSpec()), 0xd028844fc69fa426u);
  EXPECT_EQ(NamespaceFingerprint(NamespaceSpec{}), 0x3a9ce5deac872fb8u);
}

TEST(NamespaceFingerprint, IsXxh3OfTheDocumentedSerialization) {
  const NamespaceSpec spec = FixedSpec();
  std::string s = "auxstore.namespace.v1";
  internal::AppendLE32(&s, static_cast<uint32_t>(spec.model_id.size()));
  s += spec.model_id;
  for (uint32_t v : {1u /*bf16*/, 1u /*QSA v1*/, 1u /*DSA v1*/, spec.qsa.hd, spec.qsa.max_tokens,
                     spec.qsa.ratio, spec.qsa.rot}) {
    internal::AppendLE32(&s, v);
  }
  internal::AppendFloatBits(&s, spec.qsa.theta);
  internal::AppendFloatBits(&s, spec.qsa.eps);
  internal::AppendLE32(&s, spec.dsa.index_head_dim);
  EXPECT_EQ(NamespaceFingerprint(spec), XXH3_64bits(s.data(), s.size()));
}

TEST(NamespaceFingerprint, EveryGeometryFieldAndTheModelIdChangeIt) {
  const NamespaceId base = NamespaceFingerprint(FixedSpec());
  auto changed = [&](auto mutate) {
    NamespaceSpec s = FixedSpec();
    mutate(s);
    return NamespaceFingerprint(s) != base;
  };
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.model_id = "glm-5.3-next2"; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.model_id = ""; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.qsa.hd = 64; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.qsa.ratio = 8; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.qsa.rot = 32; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.qsa.theta = 500000.0f; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.qsa.eps = 1e-5f; }));
  EXPECT_TRUE(changed([](NamespaceSpec& s) { s.dsa.index_head_dim = 64; }));
}

TEST(NamespaceFingerprint, QsaMaxTokensChangesIt) {
  // Pinned as implemented. Note the asymmetry with dsa.capacity (left out as a
  // per-deployment reservation): design.md §3 does not list max_tokens either.
  NamespaceSpec s = FixedSpec();
  s.qsa.max_tokens += 1;
  EXPECT_NE(NamespaceFingerprint(s), NamespaceFingerprint(FixedSpec()));
}

TEST(NamespaceFingerprint, FloatsAreHashedByBitPattern) {
  NamespaceSpec pos = FixedSpec(), neg = FixedSpec();
  pos.qsa.theta = 0.0f;
  neg.qsa.theta = -0.0f;  // equal as floats, different bits
  EXPECT_NE(NamespaceFingerprint(pos), NamespaceFingerprint(neg));
}

TEST(NamespaceFingerprint, DsaCapacityDoesNotChangeIt) {
  NamespaceSpec s = FixedSpec();
  s.dsa.capacity = 1;
  EXPECT_EQ(NamespaceFingerprint(s), NamespaceFingerprint(FixedSpec()));
}

TEST(NamespaceFingerprint, ModelIdIsLengthPrefixed) {
  // A model id containing bytes that look like the following fields still differs.
  NamespaceSpec a = FixedSpec(), b = FixedSpec();
  a.model_id = std::string("m\0", 2);
  b.model_id = "m";
  EXPECT_NE(NamespaceFingerprint(a), NamespaceFingerprint(b));
}

// ---- PrefixHashes ---------------------------------------------------------------------------

constexpr uint64_t kSalt = 0x5eed'0000'0000'0042;

TEST(PrefixHashes, KnownAnswersArePinned) {
  EXPECT_EQ(Hexes(PrefixHashes(Iota(12), 4, kSalt)),
            (std::vector<std::string>{"992761e79ce3669b51040c922c67484e",
                                      "336232edf157d7375246302d8d29b9bf",
                                      "c91a6e4bcb962a7ee2fef1d98a0c8515"}));
}

TEST(PrefixHashes, FollowTheDocumentedChain) {
  // h_{-1} = LE64(salt) ‖ 8 zero bytes; h_i = XXH3-128_seed(salt)(h_{i-1} ‖ LE32 tokens of
  // block i), each h stored in XXH3's canonical (big-endian) form.
  const auto tokens = Iota(12, 1000);
  uint8_t prev[16] = {};
  internal::PutLE64(prev, kSalt);
  std::vector<std::string> want;
  for (size_t b = 0; b < 3; ++b) {
    std::vector<uint8_t> buf(prev, prev + 16);
    for (size_t i = 0; i < 4; ++i) {
      uint8_t le[4];
      internal::PutLE32(le, tokens[b * 4 + i]);
      buf.insert(buf.end(), le, le + 4);
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_withSeed(buf.data(), buf.size(), kSalt));
    std::memcpy(prev, c.digest, 16);
    want.push_back(ToHexString(ByteSpan(prev, 16)));
  }
  EXPECT_EQ(Hexes(PrefixHashes(tokens, 4, kSalt)), want);
}

TEST(PrefixHashes, OnePrefixPerCompleteBlockShortestFirst) {
  EXPECT_EQ(PrefixHashes(Iota(12), 4, kSalt).size(), 3u);
  EXPECT_EQ(PrefixHashes(Iota(12), 1, kSalt).size(), 12u);
  EXPECT_EQ(PrefixHashes(Iota(12), 12, kSalt).size(), 1u);
  // The prefixes of a longer sequence start with those of its leading blocks.
  const auto longer = PrefixHashes(Iota(12), 4, kSalt);
  EXPECT_EQ(PrefixHashes(Iota(8), 4, kSalt),
            std::vector<Prefix>(longer.begin(), longer.begin() + 2));
}

TEST(PrefixHashes, TrailingPartialBlockYieldsNothing) {
  EXPECT_EQ(PrefixHashes(Iota(15), 4, kSalt), PrefixHashes(Iota(12), 4, kSalt));
  EXPECT_TRUE(PrefixHashes(Iota(3), 4, kSalt).empty());
  EXPECT_TRUE(PrefixHashes({}, 4, kSalt).empty());
}

TEST(PrefixHashes, BlockSizeZeroYieldsNothing) {
  EXPECT_TRUE(PrefixHashes(Iota(12), 0, kSalt).empty());
}

TEST(PrefixHashes, HugeBlockSizeWithFewTokensYieldsNothingWithoutAllocating) {
  // Regression: the block buffer used to be sized by block_size before checking
  // for a complete block (16 GiB at block_size 2^32 - 1).
  EXPECT_TRUE(PrefixHashes(Iota(12), std::numeric_limits<uint32_t>::max(), kSalt).empty());
}

TEST(PrefixHashes, DifferentSaltChangesEveryPrefix) {
  const auto a = PrefixHashes(Iota(12), 4, kSalt);
  const auto b = PrefixHashes(Iota(12), 4, kSalt + 1);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NE(a[i], b[i]) << i;
}

TEST(PrefixHashes, PrefixDependsOnEveryEarlierBlock) {
  const auto base = PrefixHashes(Iota(16), 4, kSalt);
  for (size_t changed_block = 0; changed_block < 4; ++changed_block) {
    auto tokens = Iota(16);
    tokens[changed_block * 4 + 3] ^= 1;
    const auto h = PrefixHashes(tokens, 4, kSalt);
    for (size_t i = 0; i < 4; ++i) {
      if (i < changed_block) {
        EXPECT_EQ(h[i], base[i]) << "block " << changed_block << " prefix " << i;
      } else {
        EXPECT_NE(h[i], base[i]) << "block " << changed_block << " prefix " << i;
      }
    }
  }
}

TEST(PrefixHashes, SameBlockAtAnotherPositionHashesDifferently) {
  const std::vector<uint32_t> tokens = {7, 7, 7, 7, 7, 7};
  const auto h = PrefixHashes(tokens, 2, kSalt);
  EXPECT_NE(h[0], h[1]);
  EXPECT_NE(h[1], h[2]);
}

// ---- DigestTokens ----------------------------------------------------------------------------

TEST(DigestTokens, KnownAnswersArePinned) {
  EXPECT_EQ(ToHexString(ByteSpan(DigestTokens(Iota(12), kSalt).bytes)),
            "01c45c114cd2a7ee0de6e9c07fc7c817");
  EXPECT_EQ(ToHexString(ByteSpan(DigestTokens({}, 0).bytes)), "266804ba9bc3b8e06762572a77d4e2bc");
}

TEST(DigestTokens, IsTheDocumentedKeyedXxh3_128) {
  const auto tokens = Iota(12, 77);
  uint8_t secret[XXH3_SECRET_SIZE_MIN * 2];
  const std::string label = "auxstore.token-digest.v1";
  XXH3_generateSecret(secret, sizeof secret, label.data(), label.size());
  for (size_t i = 0; i < sizeof secret; ++i)
    secret[i] ^= static_cast<uint8_t>(kSalt >> (8 * (i % 8)));
  std::string input;
  for (uint32_t t : tokens) internal::AppendLE32(&input, t);
  internal::AppendLE64(&input, tokens.size());
  XXH128_canonical_t c;
  XXH128_canonicalFromHash(
      &c, XXH3_128bits_withSecret(input.data(), input.size(), secret, sizeof secret));
  EXPECT_EQ(ToHexString(ByteSpan(DigestTokens(tokens, kSalt).bytes)),
            ToHexString(ByteSpan(c.digest, 16)));
}

TEST(DigestTokens, DependsOnSaltOrderAndLength) {
  const auto base = DigestTokens(Iota(12), kSalt);
  EXPECT_EQ(DigestTokens(Iota(12), kSalt), base);
  EXPECT_NE(DigestTokens(Iota(12), kSalt + 1), base);
  auto swapped = Iota(12);
  std::swap(swapped[0], swapped[1]);
  EXPECT_NE(DigestTokens(swapped, kSalt), base);
  EXPECT_NE(DigestTokens(Iota(11), kSalt), base);
  EXPECT_NE(DigestTokens(std::vector<uint32_t>{0}, kSalt), DigestTokens({}, kSalt));
}

TEST(DigestTokens, IsIndependentOfThePrefixHash) {
  const auto tokens = Iota(12);
  const auto prefixes = PrefixHashes(tokens, 4, kSalt);
  EXPECT_NE(ToHexString(ByteSpan(DigestTokens(tokens, kSalt).bytes)), prefixes.back().ToHex());
  // A trailing partial block changes the digest but not the prefixes.
  EXPECT_NE(DigestTokens(Iota(13), kSalt), DigestTokens(tokens, kSalt));
}

}  // namespace
}  // namespace auxstore
