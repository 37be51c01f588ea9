// QSA v1 / DSA v1 / opaque blob codecs (format/blob_codecs.cc, docs/format.md §1-3).
#include "auxstore/blob_codecs.h"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::RandomBytes;

constexpr uint64_t kU64Max = std::numeric_limits<uint64_t>::max();

// Small geometry: 8 bytes of raw keys per token.
constexpr QsaGeometry kQsa{
    .hd = 4, .max_tokens = 8, .ratio = 2, .rot = 2, .theta = 1e4f, .eps = 1e-6f};
// Small geometry: 9 bytes per row.
constexpr DsaGeometry kDsa{.index_head_dim = 2, .capacity = 4};

std::vector<uint8_t> WithLE64(std::vector<uint8_t> blob, size_t offset, uint64_t v) {
  for (int i = 0; i < 8; ++i) blob[offset + i] = static_cast<uint8_t>(v >> (8 * i));
  return blob;
}

std::vector<uint8_t> QsaBlob(uint64_t ingested, uint64_t pooled, uint32_t hd, uint32_t seed = 1) {
  auto keys = RandomBytes(ingested * hd * 2, seed);
  auto blob = EncodeQsaBlob(ingested, pooled, keys, hd);
  EXPECT_TRUE(blob.ok()) << blob.status().ToString();
  return *blob;
}

// 16-byte header only, claiming `ingested`/`pooled`: for checks that reject
// before the size is looked at, or for overflow cases.
std::vector<uint8_t> QsaHeaderOnly(uint64_t ingested, uint64_t pooled) {
  std::vector<uint8_t> h(16);
  h = WithLE64(h, 0, ingested);
  return WithLE64(h, 8, pooled);
}

struct DsaParts {
  std::vector<uint8_t> k, gate, valid;
};

DsaParts RandomDsaParts(uint64_t len, uint32_t d, uint32_t seed) {
  return {RandomBytes(len * d * 2, seed), RandomBytes(len * d * 2, seed + 1),
          RandomBytes(len, seed + 2)};
}

std::vector<uint8_t> DsaBlob(uint64_t len, uint32_t d, uint32_t seed = 7) {
  DsaParts p = RandomDsaParts(len, d, seed);
  auto blob = EncodeDsaBlob(len, d, p.k, p.gate, p.valid);
  EXPECT_TRUE(blob.ok()) << blob.status().ToString();
  return *blob;
}

// ---- QSA round trips -----------------------------------------------------------

void ExpectQsaRoundTrip(uint64_t ingested, uint64_t pooled, const QsaGeometry& geo, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "ingested=" << ingested << " pooled=" << pooled);
  const auto keys = RandomBytes(ingested * geo.hd * 2, seed);
  auto blob = EncodeQsaBlob(ingested, pooled, keys, geo.hd);
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  ASSERT_EQ(blob->size(), 16 + keys.size());
  auto view = DecodeQsaBlob(*blob, geo);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->header.ingested, ingested);
  EXPECT_EQ(view->header.pooled, pooled);
  EXPECT_EQ(view->header.raw_key_bytes, keys.size());
  EXPECT_EQ(std::vector<uint8_t>(view->raw_keys.begin(), view->raw_keys.end()), keys);
  EXPECT_EQ(view->raw_keys.data(), blob->data() + 16) << "raw_keys must point into the blob";
}

TEST(QsaRoundTrip, ZeroTokensIsAHeaderOnlyBlob) { ExpectQsaRoundTrip(0, 0, kQsa, 1); }

TEST(QsaRoundTrip, OneToken) { ExpectQsaRoundTrip(1, 0, kQsa, 2); }

TEST(QsaRoundTrip, MaxTokensFullyPooled) {
  ExpectQsaRoundTrip(kQsa.max_tokens, kQsa.max_tokens / kQsa.ratio, kQsa, 3);
}

TEST(QsaRoundTrip, RandomCountersAtAProductionHeadDim) {
  const QsaGeometry geo{
      .hd = 128, .max_tokens = 300, .ratio = 4, .rot = 64, .theta = 1e4f, .eps = 1e-6f};
  std::mt19937 rng(11);
  for (int i = 0; i < 50; ++i) {
    const uint64_t ingested = rng() % (geo.max_tokens + 1);
    const uint64_t pooled = rng() % (ingested / geo.ratio + 1);
    ExpectQsaRoundTrip(ingested, pooled, geo, 100 + i);
  }
}

TEST(QsaEncode, HeaderIsIngestedThenPooledLittleEndian) {
  const std::vector<uint8_t> keys = {0xaa, 0xbb};
  auto blob = EncodeQsaBlob(1, 0x0102030405060708, keys, 1);
  ASSERT_TRUE(blob.ok());
  const std::vector<uint8_t> want = {1,    0,    0,    0,    0,    0,    0,    0,    0x08,
                                     0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xaa, 0xbb};
  EXPECT_EQ(*blob, want);
}

TEST(QsaEncode, RejectsRawKeysOfTheWrongSize) {
  const auto keys = RandomBytes(3 * 4 * 2 - 1, 1);
  EXPECT_ERROR(EncodeQsaBlob(3, 0, keys, 4), kInvalidArgument, "need 24");
}

TEST(QsaEncode, RejectsAnIngestedCountWhoseSizeOverflows) {
  EXPECT_ERROR(EncodeQsaBlob(uint64_t{1} << 63, 0, {}, 4), kInvalidArgument, "QSA raw keys");
}

// ---- QSA rejections --------------------------------------------------------------

TEST(QsaDecode, TrailingByteIsASizeMismatch) {
  auto blob = QsaBlob(3, 1, kQsa.hd);
  blob.push_back(0);
  EXPECT_ERROR(DecodeQsaBlob(blob, kQsa), kCorruption, "size mismatch: 41 bytes");
}

TEST(QsaDecode, AlteredIngestedIsASizeMismatch) {
  const auto blob = QsaBlob(3, 1, kQsa.hd);
  EXPECT_ERROR(DecodeQsaBlob(WithLE64(blob, 0, 4), kQsa), kCorruption,
               "size mismatch: 40 bytes for 4 tokens at hd 4, expected 48");
  EXPECT_ERROR(DecodeQsaBlob(WithLE64(blob, 0, 2), kQsa), kCorruption,
               "size mismatch: 40 bytes for 2 tokens at hd 4, expected 32");
}

TEST(QsaDecode, AlteredPooledBeyondIngestedIsRejected) {
  const auto blob = QsaBlob(3, 1, kQsa.hd);
  // 2 blocks * ratio 2 = 4 tokens > 3 ingested.
  EXPECT_ERROR(DecodeQsaBlob(WithLE64(blob, 8, 2), kQsa), kCorruption,
               "pools more than it holds: 2 blocks at ratio 2");
}

TEST(QsaDecode, PooledTimesRatioEqualToIngestedIsAccepted) {
  EXPECT_TRUE(DecodeQsaBlob(QsaBlob(4, 2, kQsa.hd), kQsa).ok());
}

TEST(QsaDecode, PooledTimesRatioThatOverflowsIsRejected) {
  const auto blob = QsaBlob(3, 1, kQsa.hd);
  // kU64Max * 2 wraps to kU64Max - 1; (2^63) * 2 wraps to 0 <= ingested.
  EXPECT_ERROR(DecodeQsaBlob(WithLE64(blob, 8, kU64Max), kQsa), kCorruption,
               "pools more than it holds");
  EXPECT_ERROR(DecodeQsaBlob(WithLE64(blob, 8, uint64_t{1} << 63), kQsa), kCorruption,
               "pools more than it holds");
}

TEST(QsaDecode, IngestedAboveMaxTokensIsOutOfRange) {
  const auto blob = QsaBlob(kQsa.max_tokens + 1, 0, kQsa.hd);
  EXPECT_ERROR(DecodeQsaBlob(blob, kQsa), kOutOfRange,
               "exceeds the key cache: 9 tokens ingested, max_tokens is 8");
}

TEST(QsaDecode, IngestedOf2To63IsAnOverflowNotAWrap) {
  // At hd 1 a token is 2 bytes: 2^63 * 2 wraps to 0, so a wrapping check would
  // accept this 16-byte blob as "0 raw-key bytes".
  const QsaGeometry hd1{.hd = 1, .max_tokens = 8, .ratio = 1};
  EXPECT_ERROR(DecodeQsaBlob(QsaHeaderOnly(uint64_t{1} << 63, 0), hd1), kCorruption,
               "QSA aux blob size overflows: ingested 9223372036854775808 tokens at hd 1");
}

TEST(QsaDecode, IngestedOfHalfU64MaxPlusOneIsAnOverflowNotAWrap) {
  EXPECT_ERROR(DecodeQsaBlob(QsaHeaderOnly(kU64Max / 2 + 1, 0), kQsa), kCorruption,
               "size overflows");
}

TEST(QsaDecode, IngestedWhoseProductWrapsToTheBlobSizeIsAnOverflow) {
  // (2^63 + 8) * 2 wraps to 16: a wrapping check would accept 16 + 16 bytes.
  const QsaGeometry hd1{.hd = 1, .max_tokens = 8, .ratio = 1};
  auto blob = QsaHeaderOnly((uint64_t{1} << 63) + 8, 0);
  blob.resize(32);
  EXPECT_ERROR(DecodeQsaBlob(blob, hd1), kCorruption, "size overflows");
}

TEST(QsaDecode, HeaderPlusRawKeysThatOverflowsIsAnOverflow) {
  // (2^63 - 8) * 2 = 2^64 - 16 fits, + 16 header bytes does not.
  const QsaGeometry hd1{.hd = 1, .max_tokens = 8, .ratio = 1};
  EXPECT_ERROR(DecodeQsaBlob(QsaHeaderOnly((uint64_t{1} << 63) - 8, 0), hd1), kCorruption,
               "size overflows");
}

TEST(QsaDecode, SizeIsCheckedBeforeMaxTokens) {
  auto blob = QsaBlob(kQsa.max_tokens + 1, 0, kQsa.hd);
  blob.pop_back();
  EXPECT_ERROR(DecodeQsaBlob(blob, kQsa), kCorruption, "size mismatch");
}

TEST(QsaDecode, MaxTokensIsCheckedBeforePooled) {
  const auto blob = QsaBlob(kQsa.max_tokens + 1, 100, kQsa.hd);
  EXPECT_ERROR(DecodeQsaBlob(blob, kQsa), kOutOfRange, "exceeds the key cache");
}

TEST(CheckQsaBlob, ValidatesFromTheHeaderAndTotalSizeAlone) {
  const auto blob = QsaBlob(5, 2, kQsa.hd);
  auto h = CheckQsaBlob(ByteSpan(blob).first(16), blob.size(), kQsa);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  EXPECT_EQ(h->ingested, 5u);
  EXPECT_EQ(h->pooled, 2u);
  EXPECT_EQ(h->raw_key_bytes, 5u * 4 * 2);
}

TEST(CheckQsaBlob, HeadShorterThanTheHeaderIsTruncated) {
  const auto blob = QsaBlob(5, 2, kQsa.hd);
  EXPECT_ERROR(CheckQsaBlob(ByteSpan(blob).first(15), blob.size(), kQsa), kCorruption,
               "QSA aux blob truncated");
}

// ---- DSA layout ----------------------------------------------------------------------

TEST(DsaBlobLayout, OffsetsFollowTheSeed) {
  auto l = DsaBlobLayout(3, 128);
  ASSERT_TRUE(l.ok());
  EXPECT_EQ(l->len, 3u);
  EXPECT_EQ(l->index_head_dim, 128u);
  EXPECT_EQ(l->key_bytes, 3u * 128 * 2);
  EXPECT_EQ(l->k_normed_offset, 16u);
  EXPECT_EQ(l->gate_offset, 16u + 768);
  EXPECT_EQ(l->valid_offset, 16u + 2 * 768);
  EXPECT_EQ(l->total_bytes, 16u + 3 * 513);
}

TEST(DsaBlobLayout, Is513BytesPerTokenAtHeadDim128) {
  EXPECT_EQ(DsaBlobLayout(1000, 128)->total_bytes - DsaBlobLayout(999, 128)->total_bytes, 513u);
  EXPECT_EQ(DsaBlobLayout(0, 128)->total_bytes, 16u);
}

TEST(DsaBlobLayout, OverflowIsOutOfRange) {
  EXPECT_ERROR(DsaBlobLayout(kU64Max, 128), kOutOfRange, "DSA aux blob size overflows");
  EXPECT_ERROR(DsaBlobLayout(1, kU64Max / 4 + 1), kOutOfRange, "size overflows");
  EXPECT_ERROR(DsaBlobLayout(kU64Max / 9 + 1, 2), kOutOfRange, "size overflows");
}

// ---- DSA round trips -----------------------------------------------------------------

void ExpectDsaRoundTrip(uint64_t len, const DsaGeometry& geo, uint32_t seed) {
  SCOPED_TRACE(testing::Message() << "len=" << len);
  const uint32_t d = geo.index_head_dim;
  const DsaParts p = RandomDsaParts(len, d, seed);
  auto blob = EncodeDsaBlob(len, d, p.k, p.gate, p.valid);
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  ASSERT_EQ(blob->size(), 16 + len * (4 * d + 1));
  auto view = DecodeDsaBlob(*blob, geo);
  ASSERT_TRUE(view.ok()) << view.status().ToString();
  EXPECT_EQ(view->layout.len, len);
  EXPECT_EQ(view->layout.index_head_dim, d);
  EXPECT_EQ(std::vector<uint8_t>(view->k_normed.begin(), view->k_normed.end()), p.k);
  EXPECT_EQ(std::vector<uint8_t>(view->gate.begin(), view->gate.end()), p.gate);
  EXPECT_EQ(std::vector<uint8_t>(view->valid.begin(), view->valid.end()), p.valid);
  EXPECT_EQ(view->k_normed.data(), blob->data() + 16);
}

TEST(DsaRoundTrip, ZeroRowsIsAHeaderOnlyBlob) { ExpectDsaRoundTrip(0, kDsa, 1); }

TEST(DsaRoundTrip, OneRow) { ExpectDsaRoundTrip(1, kDsa, 2); }

TEST(DsaRoundTrip, ExactlyCapacityRows) { ExpectDsaRoundTrip(kDsa.capacity, kDsa, 3); }

TEST(DsaRoundTrip, RandomLengthsAtAProductionHeadDim) {
  const DsaGeometry geo{.index_head_dim = 128, .capacity = 200};
  std::mt19937 rng(5);
  for (int i = 0; i < 30; ++i) ExpectDsaRoundTrip(rng() % (geo.capacity + 1), geo, 10 + i);
}

TEST(DsaEncode, WritesHeaderThenKNormedThenGateThenValid) {
  const std::vector<uint8_t> k = {1, 2, 3, 4}, gate = {5, 6, 7, 8}, valid = {9};
  auto blob = EncodeDsaBlob(1, 2, k, gate, valid);
  ASSERT_TRUE(blob.ok());
  const std::vector<uint8_t> want = {1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0,
                                     0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
  EXPECT_EQ(*blob, want);
}

TEST(DsaEncode, RejectsEachPartOfTheWrongSize) {
  DsaParts p = RandomDsaParts(2, 2, 1);
  auto short_k = p.k;
  short_k.pop_back();
  auto short_gate = p.gate;
  short_gate.pop_back();
  auto long_valid = p.valid;
  long_valid.push_back(1);
  EXPECT_ERROR(EncodeDsaBlob(2, 2, short_k, p.gate, p.valid), kInvalidArgument,
               "DSA parts are 7/8/2 bytes, 2 rows at head_dim 2 need 8/8/2");
  EXPECT_ERROR(EncodeDsaBlob(2, 2, p.k, short_gate, p.valid), kInvalidArgument,
               "DSA parts are 8/7/2");
  EXPECT_ERROR(EncodeDsaBlob(2, 2, p.k, p.gate, long_valid), kInvalidArgument,
               "DSA parts are 8/8/3");
}

TEST(DsaEncode, RejectsALengthWhoseSizeOverflows) {
  EXPECT_ERROR(EncodeDsaBlob(kU64Max, 128, {}, {}, {}), kOutOfRange, "size overflows");
}

// ---- DSA rejections --------------------------------------------------------------------

TEST(DsaDecode, TrailingByteIsASizeMismatch) {
  auto blob = DsaBlob(2, kDsa.index_head_dim);
  blob.push_back(0);
  EXPECT_ERROR(DecodeDsaBlob(blob, kDsa), kCorruption, "size mismatch: 35 bytes for 2 rows");
}

TEST(DsaDecode, AlteredLenIsASizeMismatch) {
  const auto blob = DsaBlob(2, kDsa.index_head_dim);
  EXPECT_ERROR(DecodeDsaBlob(WithLE64(blob, 0, 3), kDsa), kCorruption,
               "size mismatch: 34 bytes for 3 rows at head_dim 2, expected 43");
  EXPECT_ERROR(DecodeDsaBlob(WithLE64(blob, 0, 1), kDsa), kCorruption,
               "size mismatch: 34 bytes for 1 rows at head_dim 2, expected 25");
}

TEST(DsaDecode, HeadDimMismatchNamesBothValuesAndBlamesTheGeometry) {
  const auto blob = DsaBlob(2, 3);
  auto r = DecodeDsaBlob(blob, kDsa);
  EXPECT_ERROR(r, kInvalidArgument, "index_head_dim 3 != this layer's 2");
  EXPECT_ERROR(r, kInvalidArgument, "different model geometry");
}

TEST(DsaDecode, AlteredHeadDimFieldIsAGeometryMismatch) {
  const auto blob = DsaBlob(2, kDsa.index_head_dim);
  EXPECT_ERROR(DecodeDsaBlob(WithLE64(blob, 8, 1), kDsa), kInvalidArgument,
               "index_head_dim 1 != this layer's 2");
  EXPECT_ERROR(DecodeDsaBlob(WithLE64(blob, 8, kU64Max), kDsa), kInvalidArgument,
               "index_head_dim 18446744073709551615 != this layer's 2");
}

TEST(DsaDecode, HeadDimIsCheckedBeforeSize) {
  auto blob = DsaBlob(2, 3);
  blob.pop_back();
  EXPECT_ERROR(DecodeDsaBlob(blob, kDsa), kInvalidArgument, "different model geometry");
}

TEST(DsaDecode, MoreRowsThanCapacityIsOutOfRange) {
  const auto blob = DsaBlob(kDsa.capacity + 1, kDsa.index_head_dim);
  EXPECT_ERROR(DecodeDsaBlob(blob, kDsa), kOutOfRange,
               "holds 5 rows, more than this state's capacity of 4");
}

TEST(DsaDecode, SizeIsCheckedBeforeCapacity) {
  auto blob = DsaBlob(kDsa.capacity + 1, kDsa.index_head_dim);
  blob.push_back(0);
  EXPECT_ERROR(DecodeDsaBlob(blob, kDsa), kCorruption, "size mismatch");
}

TEST(DsaDecode, LenWhoseSizeOverflowsIsASizeMismatchNotAWrap) {
  // 2^63 rows * 9 bytes wraps; the decoder must report it, not compare a wrapped size.
  auto header = WithLE64(WithLE64(std::vector<uint8_t>(16), 0, kU64Max / 2 + 1), 8, 2);
  EXPECT_ERROR(DecodeDsaBlob(header, kDsa), kCorruption,
               "for 9223372036854775808 rows at head_dim 2, expected more than 2^64");
}

TEST(DsaDecode, LenWhoseWrappedSizeEqualsTheBlobSizeIsRejected) {
  // At d = 2 a row is 9 bytes; len = floor((2^64 - 1) / 9) + 1 gives len * 9 =
  // 2^64 + 2, which wraps to 2. A wrapping check would accept this 18-byte blob.
  const uint64_t len = kU64Max / 9 + 1;
  ASSERT_EQ(len * 9, 2u);  // the wrap the decoder must not fall for
  auto blob = WithLE64(WithLE64(std::vector<uint8_t>(18), 0, len), 8, 2);
  EXPECT_ERROR(DecodeDsaBlob(blob, kDsa), kCorruption,
               "18 bytes for " + std::to_string(len) +
                   " rows at head_dim 2, expected more "
                   "than 2^64");
}

TEST(CheckDsaBlob, ValidatesFromTheHeaderAndTotalSizeAlone) {
  const auto blob = DsaBlob(3, kDsa.index_head_dim);
  auto l = CheckDsaBlob(ByteSpan(blob).first(16), blob.size(), kDsa);
  ASSERT_TRUE(l.ok()) << l.status().ToString();
  EXPECT_EQ(l->len, 3u);
  EXPECT_EQ(l->total_bytes, blob.size());
}

TEST(CheckDsaBlob, HeadShorterThanTheHeaderIsTruncated) {
  const auto blob = DsaBlob(3, kDsa.index_head_dim);
  EXPECT_ERROR(CheckDsaBlob(ByteSpan(blob).first(8), blob.size(), kDsa), kCorruption,
               "DSA aux blob truncated");
}

// ---- Any kind ------------------------------------------------------------------------------

NamespaceSpec SpecWith(bool qsa, bool dsa) {
  NamespaceSpec s;
  s.model_id = "m";
  if (qsa) s.qsa = kQsa;
  if (dsa) s.dsa = kDsa;
  return s;
}

TEST(CheckBlob, QsaLayerInANamespaceWithoutQsaGeometryIsInvalid) {
  const auto blob = QsaBlob(1, 0, kQsa.hd);
  EXPECT_ERROR(CheckBlob(Kind::kQsa, blob, blob.size(), SpecWith(false, true)), kInvalidArgument,
               "QSA layer in a namespace registered without QSA geometry");
}

TEST(CheckBlob, DsaLayerInANamespaceWithoutDsaGeometryIsInvalid) {
  const auto blob = DsaBlob(1, kDsa.index_head_dim);
  EXPECT_ERROR(CheckBlob(Kind::kDsa, blob, blob.size(), SpecWith(true, false)), kInvalidArgument,
               "DSA layer in a namespace registered without DSA geometry");
}

TEST(CheckBlob, AppliesTheKindsOwnChecks) {
  const auto spec = SpecWith(true, true);
  const auto qsa = QsaBlob(1, 0, kQsa.hd);
  const auto dsa = DsaBlob(1, kDsa.index_head_dim);
  EXPECT_TRUE(CheckBlob(Kind::kQsa, qsa, qsa.size(), spec).ok());
  EXPECT_TRUE(CheckBlob(Kind::kDsa, dsa, dsa.size(), spec).ok());
  EXPECT_EQ(CheckBlob(Kind::kQsa, qsa, qsa.size() + 1, spec),
            CheckQsaBlob(qsa, qsa.size() + 1, kQsa).status());
  EXPECT_EQ(CheckBlob(Kind::kDsa, dsa, dsa.size() + 1, spec),
            CheckDsaBlob(dsa, dsa.size() + 1, kDsa).status());
  // A DSA blob checked as QSA: its header (len 1, d 2) claims 16 + 1*4*2 bytes.
  EXPECT_ERROR(CheckBlob(Kind::kQsa, dsa, dsa.size(), spec), kCorruption, "QSA aux blob size");
}

TEST(CheckBlob, OpaqueIsAlwaysValid) {
  const auto blob = RandomBytes(33, 1);
  EXPECT_TRUE(CheckBlob(Kind::kOpaque, blob, blob.size(), NamespaceSpec{}).ok());
  EXPECT_TRUE(CheckBlob(Kind::kOpaque, {}, 0, NamespaceSpec{}).ok());
}

TEST(CheckBlob, UnknownKindIsInvalid) {
  EXPECT_ERROR(CheckBlob(static_cast<Kind>(9), {}, 0, SpecWith(true, true)), kInvalidArgument,
               "unknown blob kind 9");
}

TEST(BlobHeadBytes, IsTheHeaderSizeOfEachKind) {
  EXPECT_EQ(BlobHeadBytes(Kind::kQsa), 16u);
  EXPECT_EQ(BlobHeadBytes(Kind::kDsa), 16u);
  EXPECT_EQ(BlobHeadBytes(Kind::kOpaque), 0u);
  EXPECT_EQ(BlobHeadBytes(static_cast<Kind>(0)), 0u);
}

TEST(Kind, PersistedValuesAreNeverRenumbered) {
  static_assert(static_cast<uint8_t>(Kind::kQsa) == 1);
  static_assert(static_cast<uint8_t>(Kind::kDsa) == 2);
  static_assert(static_cast<uint8_t>(Kind::kOpaque) == 3);
  for (int raw = 0; raw < 256; ++raw) {
    EXPECT_EQ(IsKnownKind(static_cast<uint8_t>(raw)), raw >= 1 && raw <= 3) << raw;
  }
}

TEST(Kind, NamesAreStable) {
  EXPECT_EQ(KindName(Kind::kQsa), "QSA");
  EXPECT_EQ(KindName(Kind::kDsa), "DSA");
  EXPECT_EQ(KindName(Kind::kOpaque), "opaque");
  EXPECT_EQ(KindName(static_cast<Kind>(0)), "unknown");
}

}  // namespace
}  // namespace auxstore
