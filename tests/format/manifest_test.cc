// The snapshot manifest (version 2: pages and runs), chunking and whole-blob
// hashing (format/manifest.cc, format/layer_layout.cc, format/blob_hash.cc,
// docs/format.md §5).
#include "format/manifest.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <limits>
#include <random>
#include <string>
#include <vector>

#include "auxstore/blob_hash.h"
#include "format/byte_order.h"
#include "tests/format/manifest_sample.h"
#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::AsBytes;
using test::RandomBytes;
using test::ToHexString;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();
using test::Header;
using test::kOther;
using test::kPut;
using test::Sample;

std::string Encoded(const Manifest& m) { return EncodeManifest(m); }

Result<Manifest> Decode(const std::string& s) { return DecodeManifest(AsBytes(s)); }

// A manifest that fails CheckLayerLayout once `edit` changes its layer 0
// (decoded after a round trip through the encoder).
Result<Manifest> DecodeEdited(void (*edit)(Manifest&)) {
  Manifest m = Sample(false);
  edit(m);
  return Decode(Encoded(m));
}

void PutLE32At(std::string* s, size_t off, uint32_t v) {
  internal::PutLE32(reinterpret_cast<uint8_t*>(s->data() + off), v);
}

constexpr size_t kFixedBytes = 4 + 8 + 8 + 4 + 1;  // version .. has_token_digest
constexpr size_t kLayersAt = kFixedBytes + 8 + 4;  // the layer count, without a digest

// ---- Round trips -------------------------------------------------------------------

TEST(ManifestRoundTrip, NoDigestAndNoLayers) {
  Manifest m;
  m.chunk_bytes = 1;
  const std::string s = Encoded(m);
  EXPECT_EQ(s.size(), kLayersAt + 4);
  auto r = Decode(s);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
  EXPECT_FALSE(r->token_digest.has_value());
  EXPECT_EQ(r->payload_bytes(), 0u);
}

TEST(ManifestRoundTrip, PagedLayersWithAndWithoutDigest) {
  for (bool digest : {false, true}) {
    const Manifest m = Sample(digest);
    auto r = Decode(Encoded(m));
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(*r, m);
    EXPECT_EQ(r->layers[0].full_pages(), 2u);
    EXPECT_EQ(r->layers[2].full_pages(), 0u);
  }
}

TEST(ManifestRoundTrip, ManyUnpagedLayersOfRandomSizes) {
  std::mt19937_64 rng(3);
  Manifest m;
  m.token_count = rng();
  m.created_unix_ms = static_cast<int64_t>(rng());
  m.chunk_bytes = 4 << 20;
  m.token_digest = TokenDigest{};
  m.put_id = rng();
  uint32_t layer = 0;
  for (int i = 0; i < 500; ++i) {
    layer += 1 + static_cast<uint32_t>(rng() % 3);
    const uint64_t n = rng() % (64ull << 20);
    if (rng() % 2) {
      m.layers.push_back({layer, Kind::kOpaque, n, rng(), {}, n, {1}, {}});
    } else {
      m.layers.push_back({layer, Kind::kQsa, 16 + n * 256, rng(), Header(3), n, {256}, {}});
    }
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
  m.put_id = kU64Max;
  const uint64_t n = uint64_t{std::numeric_limits<uint32_t>::max()} * 3 + 1;
  m.layers = {{std::numeric_limits<uint32_t>::max(), Kind::kOpaque, n, kU64Max, {}, n, {1}, {}}};
  auto r = Decode(Encoded(m));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
}

TEST(ManifestEncode, KnownAnswerIsPinned) {
  Manifest m;
  m.token_count = 4096;
  m.created_unix_ms = 1'790'000'000'123;
  m.chunk_bytes = 1000;
  m.put_id = 0x0102030405060708;
  m.page_tokens = 2;
  LayerEntry q{5, Kind::kQsa, 16 + 3 * 4, 0x1111, Header(0xee), 3, {4}, {}};
  q.runs = {{0x99, 0, 64, 0, 1}};
  m.layers = {q};
  EXPECT_EQ(ToHexString(Encoded(m)),
            "02000000"                          // version 2
            "0010000000000000"                  // token_count 4096
            "7b6c50c4a0010000"                  // created_unix_ms
            "e8030000"                          // chunk_bytes 1000
            "00"                                // no token digest
            "0807060504030201"                  // put id
            "02000000"                          // page_tokens 2
            "01000000"                          // 1 layer
            "05000000"                          // layer 5
            "01"                                // QSA
            "1c00000000000000"                  // 28 bytes
            "1111000000000000"                  // layer digest
            "10"                                // 16 header bytes
            "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"  // the header
            "0300000000000000"                  // 3 rows
            "01"                                // 1 array
            "04000000"                          // 4 bytes per row
            "01000000"                          // 1 run
            "9900000000000000"                  // owner
            "00000000"                          // owner_first_page
            "40000000"                          // owner_chunk_bytes 64
            "00000000"                          // first_page
            "01000000");                        // pages
}

// ---- Rejections -----------------------------------------------------------------------

TEST(ManifestDecode, TrailingBytesAreRejected) {
  std::string s = Encoded(Sample(true));
  s.push_back('\0');
  EXPECT_ERROR(Decode(s), kCorruption, "manifest has trailing bytes");
}

TEST(ManifestDecode, UnknownVersionIsRejected) {
  for (uint32_t version : {0u, 1u, 3u, 0xffffffffu}) {
    std::string s = Encoded(Sample(false));
    PutLE32At(&s, 0, version);
    EXPECT_ERROR(Decode(s), kCorruption, "manifest has unknown version " + std::to_string(version));
  }
}

TEST(ManifestDecode, UnknownLayerKindIsRejected) {
  const Manifest m = Sample(false);
  for (uint8_t kind : {0, 4, 0x10, 0xff}) {
    std::string s = Encoded(m);
    s[kLayersAt + 4 + 4] = static_cast<char>(kind);  // layer 0's kind
    EXPECT_ERROR(Decode(s), kCorruption,
                 "manifest layer 0 has unknown kind " + std::to_string(kind));
  }
}

TEST(ManifestDecode, DescendingOrRepeatedLayersAreRejected) {
  for (uint32_t layer : {2u, 0u}) {
    Manifest m = Sample(false);
    m.layers[2].layer = layer;  // 0, 3, then 2 or 0 again
    EXPECT_ERROR(Decode(Encoded(m)), kCorruption,
                 "manifest layers out of order at layer " + std::to_string(layer));
  }
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
  std::string s = Encoded(Sample(false));
  PutLE32At(&s, kLayersAt, 0xffffffffu);
  EXPECT_ERROR(Decode(s), kCorruption, "manifest truncated");
}

TEST(ManifestDecode, HeaderOfTheWrongSizeForItsKindIsRejected) {
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].header.resize(15); }), kCorruption,
               "manifest layer 0 has a header of 15 bytes");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[2].header = {1}; }), kCorruption,
               "manifest layer 7 has a header of 1 bytes");
}

TEST(ManifestDecode, ArraysOtherThanTheKindsAreRejected) {
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[1].row_bytes.pop_back(); }), kCorruption,
               "manifest layer 3 has 2 arrays for its kind");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].row_bytes.push_back(1); }), kCorruption,
               "manifest layer 0 has 2 arrays for its kind");
}

TEST(ManifestDecode, RowsThatDoNotMakeTheBlobsSizeAreRejected) {
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].bytes += 1; }), kCorruption,
               "manifest layer 0 holds 96 bytes of rows and header, not 97");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[1].rows = 4; }), kCorruption,
               "manifest layer 3 holds 100 bytes of rows and header, not 121");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) {
                 m.layers[0].rows = kU64Max / 4;
                 m.layers[0].runs.clear();
               }),
               kCorruption, "manifest layer 0 has a size that overflows");
}

TEST(ManifestDecode, OpaqueLayersHaveNoPagesAndOneByteRows) {
  EXPECT_ERROR(DecodeEdited([](Manifest& m) {
                 m.layers[2].runs = {{kPut, 0, 1000, 0, 1}};
               }),
               kCorruption, "manifest layer 7 is an opaque layer with rows, pages or a row size");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[2].row_bytes = {7}; }), kCorruption,
               "manifest layer 7 is an opaque layer");
}

TEST(ManifestDecode, PagesNeedAPageSize) {
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.page_tokens = 0; }), kCorruption,
               "manifest layer 0 has pages but the manifest's page size is 0");
}

TEST(ManifestDecode, RunsMustCoverThePagesInOrderFromPageZero) {
  const char* kGap = "manifest layer 0 has runs that do not cover its pages in order from page 0";
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[0].first_page = 1; }), kCorruption,
               kGap);
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[1].first_page = 2; }), kCorruption,
               kGap);
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[0].pages = 0; }), kCorruption, kGap);
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[0].owner_first_page = 1; }),
               kCorruption, kGap);
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[0].owner_chunk_bytes = 0; }),
               kCorruption, kGap);
}

TEST(ManifestDecode, PagesPastTheRowsAreRejected) {
  // 10 rows hold 2 pages of 4; a third would end at row 12.
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[1].pages = 2; }), kCorruption,
               "manifest layer 0 has more pages than rows");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[1].pages = 0xffffffffu; }),
               kCorruption, "manifest layer 0 has too many pages");
}

TEST(ManifestDecode, OwnPagesComeLastInOneRunAtTheOwnChunkSize) {
  EXPECT_ERROR(DecodeEdited([](Manifest& m) {
                 m.layers[0].runs = {{kPut, 0, 1000, 0, 1}, {kOther, 1, 512, 1, 1}};
               }),
               kCorruption, "manifest layer 0 has pages of another put after its own");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) {
                 m.layers[0].runs = {{kPut, 0, 1000, 0, 1}, {kPut, 1, 1000, 1, 1}};
               }),
               kCorruption, "manifest layer 0 has its own pages in more than one run");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[1].owner_chunk_bytes = 512; }),
               kCorruption, "manifest layer 0 has its own pages cut at another chunk size");
  EXPECT_ERROR(DecodeEdited([](Manifest& m) { m.layers[0].runs[1].owner_first_page = 0; }),
               kCorruption, "manifest layer 0 has its own pages at another page than they start");
}

TEST(ManifestDecode, SharedRunsMayStartInsideTheirOwnersStream) {
  // Pages 0-1 of an owner that stored pages 0-2: a run can cover part of
  // what its owner stored, from any page on.
  Manifest m = Sample(false);
  m.layers[0].runs = {{kOther, 0, 512, 0, 1}, {0x22, 0, 512, 1, 1}};
  auto r = Decode(Encoded(m));
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(*r, m);
}

// ---- Manifest helpers ----------------------------------------------------------------------

TEST(Manifest, PayloadBytesSumsTheLayers) {
  EXPECT_EQ(Sample(false).payload_bytes(), 96u + 121 + 7);
}

TEST(Manifest, FindLayerLooksUpByLayerIndexNotPosition) {
  const Manifest m = Sample(false);
  ASSERT_NE(m.FindLayer(3), nullptr);
  EXPECT_EQ(m.FindLayer(3)->bytes, 121u);
  EXPECT_EQ(m.FindLayer(1), nullptr);
}

// ---- ChunkCount / ChunkSize -----------------------------------------------------------------

TEST(ChunkCount, EmptyStreamHasNoChunks) { EXPECT_EQ(ChunkCount(0, 4096), 0u); }

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
