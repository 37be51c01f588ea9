// The snapshot manifest, chunking and whole-blob hashing (format/manifest.cc,
// format/blob_hash.cc, docs/format.md §5).
#include "format/manifest.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "format/byte_order.h"
#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::AsBytes;
using test::RandomBytes;
using test::ToHexString;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
constexpr size_t kFixedBytes = 4 + 8 + 8 + 4 + 1;  // version .. has_token_digest
constexpr size_t kLayerBytes = 4 + 1 + 8 + 4 + 8;

LayerEntry Layer(uint32_t layer, Kind kind, uint64_t bytes, uint32_t chunk_bytes,
                 uint64_t xxh3 = 0) {
  return {layer, kind, bytes, ChunkCount(bytes, chunk_bytes), xxh3};
}

Manifest Sample(bool with_digest) {
  Manifest m;
  m.token_count = 4096;
  m.created_unix_ms = 1'790'000'000'123;
  m.chunk_bytes = 1000;
  if (with_digest) {
    TokenDigest d;
    for (int i = 0; i < 16; ++i) d.bytes[i] = static_cast<uint8_t>(0xa0 + i);
    m.token_digest = d;
  }
  m.layers = {Layer(0, Kind::kQsa, 16, 1000, 0x1111), Layer(3, Kind::kDsa, 2500, 1000, 0x2222),
              Layer(7, Kind::kOpaque, 0, 1000, 0x3333)};
  return m;
}

std::string Encoded(const Manifest& m) { return EncodeManifest(m); }

Result<Manifest> Decode(const std::string& s) { return DecodeManifest(AsBytes(s)); }

// Offset of layer `i`'s entry in an encoding of `m`.
size_t LayerOffset(const Manifest& m, size_t i) {
  return kFixedBytes + (m.token_digest ? 16 : 0) + 4 + i * kLayerBytes;
}

void PutLE32At(std::string* s, size_t off, uint32_t v) {
  internal::PutLE32(reinterpret_cast<uint8_t*>(s->data() + off), v);
}

// ---- Round trips -------------------------------------------------------------------

TEST(ManifestRoundTrip, NoDigestAndNoLayers) {
  Manifest m;
  m.token_count = 0;
  m.chunk_bytes = 1;
  const std::string s = Encoded(m);
  EXPECT_EQ(s.size(), kFixedBytes + 4);
  auto r = Decode(s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
  EXPECT_FALSE(r->token_digest.has_value());
  EXPECT_EQ(r->payload_bytes(), 0u);
}

TEST(ManifestRoundTrip, WithDigestAndLayers) {
  const Manifest m = Sample(true);
  const std::string s = Encoded(m);
  EXPECT_EQ(s.size(), kFixedBytes + 16 + 4 + 3 * kLayerBytes);
  auto r = Decode(s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
}

TEST(ManifestRoundTrip, WithoutDigestAndLayers) {
  const Manifest m = Sample(false);
  auto r = Decode(Encoded(m));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
}

TEST(ManifestRoundTrip, ManyLayersOfRandomSizes) {
  std::mt19937_64 rng(3);
  Manifest m;
  m.token_count = rng();
  m.created_unix_ms = static_cast<int64_t>(rng());
  m.chunk_bytes = 4 << 20;
  m.token_digest = TokenDigest{};
  uint32_t layer = 0;
  for (int i = 0; i < 500; ++i) {
    layer += 1 + static_cast<uint32_t>(rng() % 3);
    const Kind kind = static_cast<Kind>(1 + rng() % 3);
    m.layers.push_back(Layer(layer, kind, rng() % (64ull << 20), m.chunk_bytes, rng()));
  }
  auto r = Decode(Encoded(m));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
}

TEST(ManifestRoundTrip, NegativeCreationTimeAndExtremeCounters) {
  Manifest m;
  m.token_count = kU64Max;
  m.created_unix_ms = std::numeric_limits<int64_t>::min();
  m.chunk_bytes = std::numeric_limits<uint32_t>::max();
  m.layers = {Layer(std::numeric_limits<uint32_t>::max(), Kind::kOpaque,
                    uint64_t{std::numeric_limits<uint32_t>::max()} * 3 + 1, m.chunk_bytes,
                    kU64Max)};
  ASSERT_EQ(m.layers[0].chunks, 4u);
  auto r = Decode(Encoded(m));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
}

TEST(ManifestEncode, KnownAnswerIsPinned) {
  EXPECT_EQ(ToHexString(Encoded(Sample(true))),
            "01000000"                            // version 1
            "0010000000000000"                    // token_count 4096
            "7b6c50c4a0010000"                    // created_unix_ms
            "e8030000"                            // chunk_bytes 1000
            "01a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"  // token digest
            "03000000"                            // 3 layers
            "00000000"
            "01"
            "1000000000000000"
            "01000000"
            "1111000000000000"
            "03000000"
            "02"
            "c409000000000000"
            "03000000"
            "2222000000000000"
            "07000000"
            "03"
            "0000000000000000"
            "01000000"
            "3333000000000000");
}

TEST(ManifestEncode, FieldsAreLittleEndianInTheDocumentedOrder) {
  const std::string s = Encoded(Sample(false));
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  EXPECT_EQ(internal::GetLE32(p), kManifestVersion);
  EXPECT_EQ(internal::GetLE64(p + 4), 4096u);
  EXPECT_EQ(internal::GetLE64(p + 12), 1'790'000'000'123u);
  EXPECT_EQ(internal::GetLE32(p + 20), 1000u);
  EXPECT_EQ(p[24], 0);                          // no token digest
  EXPECT_EQ(internal::GetLE32(p + 25), 3u);     // layer count
  const uint8_t* l1 = p + 29 + kLayerBytes;     // second layer
  EXPECT_EQ(internal::GetLE32(l1), 3u);         // layer
  EXPECT_EQ(l1[4], 2);                          // kind DSA
  EXPECT_EQ(internal::GetLE64(l1 + 5), 2500u);  // bytes
  EXPECT_EQ(internal::GetLE32(l1 + 13), 3u);    // chunks
  EXPECT_EQ(internal::GetLE64(l1 + 17), 0x2222u);
}

// ---- Rejections -----------------------------------------------------------------------

TEST(ManifestDecode, EveryTruncationIsRejected) {
  for (bool digest : {false, true}) {
    const std::string s = Encoded(Sample(digest));
    for (size_t n = 0; n < s.size(); ++n) {
      SCOPED_TRACE(testing::Message() << "digest=" << digest << " n=" << n);
      EXPECT_ERROR(Decode(s.substr(0, n)), kCorruption, "manifest truncated");
    }
  }
}

TEST(ManifestDecode, TrailingBytesAreRejected) {
  std::string s = Encoded(Sample(true));
  s.push_back('\0');
  EXPECT_ERROR(Decode(s), kCorruption, "manifest has trailing bytes");
  s += std::string(kLayerBytes - 1, '\0');  // exactly one more layer's worth: still trailing
  EXPECT_ERROR(Decode(s), kCorruption, "manifest has trailing bytes");
}

TEST(ManifestDecode, UnknownVersionIsRejected) {
  for (uint32_t version : {0u, 2u, 0xffffffffu}) {
    std::string s = Encoded(Sample(false));
    PutLE32At(&s, 0, version);
    EXPECT_ERROR(Decode(s), kCorruption, "manifest has unknown version " + std::to_string(version));
  }
}

TEST(ManifestDecode, UnknownLayerKindIsRejected) {
  const Manifest m = Sample(false);
  for (uint8_t kind : {0, 4, 0x10, 0xff}) {
    std::string s = Encoded(m);
    s[LayerOffset(m, 1) + 4] = static_cast<char>(kind);
    EXPECT_ERROR(Decode(s), kCorruption,
                 "manifest layer 3 has unknown kind " + std::to_string(kind));
  }
}

TEST(ManifestDecode, DescendingLayersAreRejected) {
  const Manifest m = Sample(false);
  std::string s = Encoded(m);
  PutLE32At(&s, LayerOffset(m, 2), 2);  // 0, 3, 2
  EXPECT_ERROR(Decode(s), kCorruption, "manifest layers out of order at layer 2");
}

TEST(ManifestDecode, RepeatedLayerIsRejected) {
  const Manifest m = Sample(false);
  std::string s = Encoded(m);
  PutLE32At(&s, LayerOffset(m, 1), 0);  // 0, 0, 7
  EXPECT_ERROR(Decode(s), kCorruption, "manifest layers out of order at layer 0");
}

TEST(ManifestDecode, ChunkCountInconsistentWithSizeIsRejected) {
  const Manifest m = Sample(false);
  for (uint32_t chunks : {0u, 2u, 4u}) {  // layer 3 holds 2500 bytes at 1000: 3 chunks
    std::string s = Encoded(m);
    PutLE32At(&s, LayerOffset(m, 1) + 13, chunks);
    EXPECT_ERROR(Decode(s), kCorruption,
                 "manifest layer 3 claims " + std::to_string(chunks) + " chunks for 2500 bytes");
  }
}

TEST(ManifestDecode, EmptyBlobMustClaimOneChunk) {
  const Manifest m = Sample(false);
  std::string s = Encoded(m);
  PutLE32At(&s, LayerOffset(m, 2) + 13, 0);  // layer 7: 0 bytes
  EXPECT_ERROR(Decode(s), kCorruption, "manifest layer 7 claims 0 chunks for 0 bytes");
}

TEST(ManifestDecode, ChunkCountThatDoesNotFitInU32IsRejected) {
  // 2^40 bytes at 1-byte chunks is 2^40 chunks: a u32 count cannot match it,
  // in particular not the truncated value 0.
  Manifest m;
  m.chunk_bytes = 1;
  m.layers = {LayerEntry{0, Kind::kOpaque, uint64_t{1} << 40, 0, 0}};
  EXPECT_ERROR(Decode(Encoded(m)), kCorruption, "claims 0 chunks for 1099511627776 bytes");
  m.layers[0].chunks = std::numeric_limits<uint32_t>::max();
  EXPECT_ERROR(Decode(Encoded(m)), kCorruption, "claims 4294967295 chunks");
}

TEST(ManifestDecode, ChunkCountOfAHugeBlobDoesNotWrap) {
  // bytes + chunk_bytes - 1 wraps for bytes near 2^64; the count must not become 0.
  Manifest m;
  m.chunk_bytes = 2;
  m.layers = {LayerEntry{0, Kind::kOpaque, kU64Max, 0, 0}};
  EXPECT_ERROR(Decode(Encoded(m)), kCorruption, "claims 0 chunks");
}

TEST(ManifestDecode, ChunkBytesOfZeroIsRejected) {
  Manifest m = Sample(false);
  m.chunk_bytes = 0;
  EXPECT_ERROR(Decode(Encoded(m)), kCorruption, "manifest has a chunk size of 0");
}

TEST(ManifestDecode, TokenDigestFlagOtherThanZeroOrOneIsRejected) {
  std::string s = Encoded(Sample(false));
  s[24] = 2;
  EXPECT_ERROR(Decode(s), kCorruption, "manifest has a bad token-digest flag");
}

TEST(ManifestDecode, LayerCountClaimingMoreLayersThanPresentIsTruncated) {
  const Manifest m = Sample(false);
  std::string s = Encoded(m);
  PutLE32At(&s, kFixedBytes, 0xffffffffu);
  EXPECT_ERROR(Decode(s), kCorruption, "manifest truncated");
}

// ---- Manifest helpers ----------------------------------------------------------------------

TEST(Manifest, PayloadBytesSumsTheLayers) { EXPECT_EQ(Sample(false).payload_bytes(), 2516u); }

TEST(Manifest, FindLayerLooksUpByLayerIndexNotPosition) {
  const Manifest m = Sample(false);
  ASSERT_NE(m.FindLayer(3), nullptr);
  EXPECT_EQ(m.FindLayer(3)->bytes, 2500u);
  EXPECT_EQ(m.FindLayer(1), nullptr);
}

// ---- ChunkCount / ChunkSize -----------------------------------------------------------------

TEST(ChunkCount, EmptyBlobIsOneEmptyChunk) { EXPECT_EQ(ChunkCount(0, 4096), 1u); }

TEST(ChunkCount, RoundsUpAtChunkBoundaries) {
  EXPECT_EQ(ChunkCount(1, 4096), 1u);
  EXPECT_EQ(ChunkCount(4095, 4096), 1u);
  EXPECT_EQ(ChunkCount(4096, 4096), 1u);
  EXPECT_EQ(ChunkCount(4097, 4096), 2u);
  EXPECT_EQ(ChunkCount(8192, 4096), 2u);
  EXPECT_EQ(ChunkCount(8193, 4096), 3u);
  EXPECT_EQ(ChunkCount(5, 1), 5u);
}

TEST(ChunkCount, DoesNotWrapNearTwoTo64) {
  const uint32_t u32max = std::numeric_limits<uint32_t>::max();
  EXPECT_EQ(ChunkCount(kU64Max, u32max), u32max) << "2^32 + 1 chunks saturates";
  EXPECT_EQ(ChunkCount(kU64Max, 2), u32max);
  EXPECT_EQ(ChunkCount(uint64_t{u32max} * u32max, u32max), u32max);  // exactly u32max chunks
}

TEST(ChunkCount, SaturatesWhenTheCountExceedsAU32ChunkIndex) {
  EXPECT_EQ(ChunkCount(uint64_t{1} << 40, 1), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(ChunkCount(uint64_t{1} << 32, 1), std::numeric_limits<uint32_t>::max());
  EXPECT_EQ(ChunkCount((uint64_t{1} << 32) - 1, 1), std::numeric_limits<uint32_t>::max());
}

TEST(ChunkSize, ChunksCoverTheBlobExactly) {
  for (uint64_t bytes : {0, 1, 999, 1000, 1001, 2500, 3000}) {
    SCOPED_TRACE(bytes);
    const uint32_t n = ChunkCount(bytes, 1000);
    uint64_t total = 0;
    for (uint32_t c = 0; c < n; ++c) {
      const uint64_t size = ChunkSize(bytes, 1000, c);
      if (c + 1 < n) {
        EXPECT_EQ(size, 1000u);
      }
      total += size;
    }
    EXPECT_EQ(total, bytes);
    EXPECT_EQ(ChunkSize(bytes, 1000, n), 0u) << "past the last chunk";
  }
}

TEST(ChunkSize, LastChunkHoldsTheRemainder) {
  EXPECT_EQ(ChunkSize(2500, 1000, 2), 500u);
  EXPECT_EQ(ChunkSize(0, 1000, 0), 0u);
}

TEST(ChunkSize, LargeIndicesDoNotOverflow) {
  const uint32_t u32max = std::numeric_limits<uint32_t>::max();
  EXPECT_EQ(ChunkSize(kU64Max, u32max, u32max), u32max);  // start = (2^32-1)^2 < 2^64
  EXPECT_EQ(ChunkSize(1000, u32max, u32max), 0u);
}

// ---- BlobHasher ---------------------------------------------------------------------------

TEST(BlobHasher, IsXxh3With64BitsAndNoSeed) {
  const auto blob = RandomBytes(1000, 1);
  EXPECT_EQ(BlobHasher::Hash(blob), XXH3_64bits(blob.data(), blob.size()));
  EXPECT_EQ(BlobHasher::Hash({}), 0x2d06800538d394c2u);  // XXH3-64 of nothing
}

TEST(BlobHasher, StreamingInPiecesEqualsOneShot) {
  const auto blob = RandomBytes(10'000, 2);
  BlobHasher h;
  std::mt19937 rng(3);
  size_t off = 0;
  while (off < blob.size()) {
    const size_t n = std::min<size_t>(rng() % 700, blob.size() - off);
    h.Update(ByteSpan(blob).subspan(off, n));
    off += n;
  }
  EXPECT_EQ(h.Digest(), BlobHasher::Hash(blob));
}

TEST(BlobHasher, DigestMidStreamLetsUpdatesContinue) {
  const auto blob = RandomBytes(300, 4);
  BlobHasher h;
  h.Update(ByteSpan(blob).first(100));
  EXPECT_EQ(h.Digest(), BlobHasher::Hash(ByteSpan(blob).first(100)));
  h.Update(ByteSpan(blob).subspan(100));
  EXPECT_EQ(h.Digest(), BlobHasher::Hash(blob));
}

TEST(BlobHasher, MovedHasherKeepsItsState) {
  const auto blob = RandomBytes(64, 5);
  BlobHasher a;
  a.Update(ByteSpan(blob).first(10));
  BlobHasher b(std::move(a));
  b.Update(ByteSpan(blob).subspan(10));
  BlobHasher c;
  c = std::move(b);
  EXPECT_EQ(c.Digest(), BlobHasher::Hash(blob));
}

}  // namespace
}  // namespace auxstore
