// The record envelope (format/envelope.cc, docs/format.md §4).
#include "format/envelope.h"

#include <gtest/gtest.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "format/byte_order.h"
#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::AsBytes;
using test::RandomBytes;
using test::ToHexString;

constexpr size_t kFusedPiece = 256 * 1024;  // envelope.cc's hash-while-copy piece

const std::string kKey = "record-key-0001";

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::vector<uint8_t> Envelope(ByteSpan payload, RecordKind kind = RecordKind::kOpaqueChunk,
                              std::string_view key = kKey) {
  return Bytes(EncodeEnvelope(AsBytes(key), kind, payload));
}

// The checksum recomputed from the documented rule, independently of envelope.cc.
uint64_t SpecChecksum(std::string_view key, ByteSpan value) {
  const uint64_t seed = XXH3_64bits(key.data(), key.size());
  std::vector<uint8_t> hashed(value.begin(), value.begin() + 16);
  hashed.insert(hashed.end(), value.begin() + 24, value.end());
  return XXH3_64bits_withSeed(hashed.data(), hashed.size(), seed);
}

// Decodes with both entry points and checks they agree; returns DecodeEnvelope's result.
Result<EnvelopeView> DecodeBoth(ByteSpan value, std::string_view key = kKey) {
  auto plain = DecodeEnvelope(AsBytes(key), value);
  const size_t payload = value.size() >= 24 ? value.size() - 24 : 0;
  std::vector<uint8_t> dst(payload);
  auto into = DecodeEnvelopeInto(AsBytes(key), value, dst);
  EXPECT_EQ(plain.status(), into.status());
  if (plain.ok() && into.ok()) {
    EXPECT_EQ(plain->kind, into->kind);
    EXPECT_EQ(plain->flags, into->flags);
    EXPECT_EQ(plain->payload.data(), into->payload.data());
    EXPECT_EQ(plain->payload.size(), into->payload.size());
    EXPECT_TRUE(std::equal(dst.begin(), dst.end(), plain->payload.begin()));
  }
  return plain;
}

// ---- Layout and known answer -------------------------------------------------------

TEST(EnvelopeEncode, KnownAnswerIsPinned) {
  const std::string payload = "hello, aux";
  EXPECT_EQ(ToHexString(EncodeEnvelope(AsBytes(kKey), RecordKind::kQsaChunk, AsBytes(payload))),
            "41555852"          // magic
            "01"                // version
            "01"                // kind: QSA chunk
            "0000"              // flags
            "0a00000000000000"  // payload length 10
            "7aba3f4093d676a8"  // checksum
            "68656c6c6f2c20617578");
}

TEST(EnvelopeEncode, EmptyPayloadKnownAnswerIsPinned) {
  EXPECT_EQ(ToHexString(EncodeEnvelope(AsBytes(kKey), RecordKind::kManifest, {})),
            "4155585201100000000000000000000018e7d56ca61e8a3e");
}

TEST(EnvelopeEncode, HeaderFollowsTheDocumentedLayout) {
  const auto payload = RandomBytes(300, 1);
  const auto v = Envelope(payload, RecordKind::kDsaChunk);
  ASSERT_EQ(v.size(), 24u + 300);
  EXPECT_EQ(std::string(v.begin(), v.begin() + 4), "AUXR");
  EXPECT_EQ(v[4], 1);                                                  // version
  EXPECT_EQ(v[5], 2);                                                  // kind
  EXPECT_EQ(internal::GetLE16(v.data() + 6), 0);                       // flags
  EXPECT_EQ(internal::GetLE64(v.data() + 8), 300u);                    // payload length
  EXPECT_EQ(internal::GetLE64(v.data() + 16), SpecChecksum(kKey, v));  // checksum
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), v.begin() + 24));
}

TEST(EnvelopeEncode, HeaderOnlyEncoderMatchesTheFullEncoder) {
  const auto payload = RandomBytes(1000, 2);
  uint8_t header[kEnvelopeHeaderBytes];
  EncodeEnvelopeHeader(AsBytes(kKey), RecordKind::kOpaqueChunk, payload, header);
  const auto v = Envelope(payload);
  EXPECT_TRUE(std::equal(header, header + 24, v.begin()));
}

TEST(EnvelopeEncode, ChecksumDependsOnTheKey) {
  const auto payload = RandomBytes(10, 3);
  EXPECT_NE(Envelope(payload, RecordKind::kOpaqueChunk, "a"),
            Envelope(payload, RecordKind::kOpaqueChunk, "b"));
}

// ---- Round trips ------------------------------------------------------------------------

TEST(EnvelopeRoundTrip, EveryRecordKindAtEverySmallSize) {
  for (RecordKind kind : {RecordKind::kQsaChunk, RecordKind::kDsaChunk, RecordKind::kOpaqueChunk,
                          RecordKind::kManifest, RecordKind::kNamespace, RecordKind::kStoreMeta}) {
    for (size_t n : {0, 1, 2, 23, 24, 25, 4096}) {
      SCOPED_TRACE(testing::Message() << "kind=" << int(kind) << " n=" << n);
      const auto payload = RandomBytes(n, static_cast<uint32_t>(n) + 1);
      const auto v = Envelope(payload, kind);
      auto r = DecodeBoth(v);
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->kind, kind);
      EXPECT_EQ(r->flags, 0);
      EXPECT_EQ(r->payload.data(), v.data() + 24) << "payload must point into the value";
      EXPECT_TRUE(std::equal(payload.begin(), payload.end(), r->payload.begin(), r->payload.end()));
    }
  }
}

TEST(EnvelopeRoundTrip, EmptyKeyIsAValidKey) {
  const auto payload = RandomBytes(5, 4);
  EXPECT_TRUE(DecodeBoth(Envelope(payload, RecordKind::kOpaqueChunk, ""), "").ok());
}

TEST(EnvelopeRoundTrip, OpaqueBlobsOfRandomSizesComeBackByteForByte) {
  std::mt19937 rng(9);
  for (int i = 0; i < 20; ++i) {
    const auto blob = RandomBytes(rng() % 5000, 50 + i);
    const auto v = Envelope(blob);
    auto r = DecodeBoth(v);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(std::vector<uint8_t>(r->payload.begin(), r->payload.end()), blob);
  }
}

// ---- Rejections -----------------------------------------------------------------------------

TEST(EnvelopeDecode, EverySingleBitFlipIsDetected) {
  const auto good = Envelope(RandomBytes(8, 5), RecordKind::kOpaqueChunk);
  ASSERT_EQ(good.size(), 32u);
  for (size_t byte = 0; byte < good.size(); ++byte) {
    for (int bit = 0; bit < 8; ++bit) {
      SCOPED_TRACE(testing::Message() << "byte " << byte << " bit " << bit);
      auto v = good;
      v[byte] ^= static_cast<uint8_t>(1u << bit);
      auto r = DecodeBoth(v);
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kCorruption);
      const std::string msg = r.status().message();
      if (byte < 4) {
        EXPECT_EQ(msg, "record has a bad magic number");
      } else if (byte == 4) {
        EXPECT_NE(msg.find("unknown envelope version"), std::string::npos) << msg;
      } else if (byte == 5) {
        // 3 flips to 2 or 1 (known kinds: caught by the checksum) or an unknown kind.
        const bool known = IsKnownRecordKind(v[5]);
        EXPECT_NE(msg.find(known ? "checksum mismatch" : "unknown kind"), std::string::npos) << msg;
      } else if (byte < 8) {
        EXPECT_NE(msg.find("unknown flags"), std::string::npos) << msg;
      } else if (byte < 16) {
        EXPECT_NE(msg.find("length mismatch"), std::string::npos) << msg;
      } else {
        EXPECT_NE(msg.find("checksum mismatch"), std::string::npos) << msg;
      }
    }
  }
}

TEST(EnvelopeDecode, BadMagic) {
  auto v = Envelope(RandomBytes(4, 1));
  v[0] = 'X';
  EXPECT_ERROR(DecodeBoth(v), kCorruption, "record has a bad magic number");
}

TEST(EnvelopeDecode, UnknownVersion) {
  auto v = Envelope(RandomBytes(4, 1));
  v[4] = 2;
  EXPECT_ERROR(DecodeBoth(v), kCorruption,
               "record has unknown envelope version 2 (this build reads version 1)");
  v[4] = 0;
  EXPECT_ERROR(DecodeBoth(v), kCorruption, "unknown envelope version 0");
}

TEST(EnvelopeDecode, UnknownKind) {
  for (uint8_t kind : {0, 4, 0x0f, 0x15, 0xff}) {
    auto v = Envelope(RandomBytes(4, 1));
    v[5] = kind;
    EXPECT_ERROR(DecodeBoth(v), kCorruption, "record has unknown kind " + std::to_string(kind));
  }
}

TEST(EnvelopeDecode, NonzeroFlagsAreNamedInHex) {
  auto v = Envelope(RandomBytes(4, 1));
  v[6] = 0x10;  // flags are LE: 0x0010
  EXPECT_ERROR(DecodeBoth(v), kCorruption, "record has unknown flags 0x0010");
  v[6] = 0;
  v[7] = 0xab;  // 0xab00
  EXPECT_ERROR(DecodeBoth(v), kCorruption, "record has unknown flags 0xab00");
}

TEST(EnvelopeDecode, TrailingBytesAreALengthMismatch) {
  auto v = Envelope(RandomBytes(10, 6));
  v.push_back(0);
  EXPECT_ERROR(DecodeBoth(v), kCorruption,
               "record length mismatch: header says 10 payload bytes, value holds 11 (trailing "
               "bytes)");
}

TEST(EnvelopeDecode, ValueCopiedUnderAnotherKeyFailsTheChecksum) {
  const auto v = Envelope(RandomBytes(10, 7), RecordKind::kOpaqueChunk, "key-A");
  ASSERT_TRUE(DecodeBoth(v, "key-A").ok());
  EXPECT_ERROR(DecodeBoth(v, "key-B"), kCorruption, "record checksum mismatch: stored ");
}

TEST(EnvelopeDecode, ChecksumMismatchNamesBothValuesInHex) {
  auto v = Envelope(RandomBytes(10, 7));
  const uint64_t stored = internal::GetLE64(v.data() + 16);
  v[30] ^= 1;
  char want[80];
  std::snprintf(want, sizeof want, "stored %016llx, computed %016llx",
                static_cast<unsigned long long>(stored),
                static_cast<unsigned long long>(SpecChecksum(kKey, v)));
  EXPECT_ERROR(DecodeBoth(v), kCorruption, want);
}

// ---- DecodeEnvelopeInto ------------------------------------------------------------------------

TEST(DecodeEnvelopeInto, CopiesPayloadsAroundTheFusedPieceSize) {
  for (size_t n : {kFusedPiece - 1, kFusedPiece, kFusedPiece + 1, 2 * kFusedPiece, 3 * kFusedPiece,
                   3 * kFusedPiece + 17}) {
    SCOPED_TRACE(n);
    const auto payload = RandomBytes(n, static_cast<uint32_t>(n));
    const auto v = Envelope(payload);
    std::vector<uint8_t> dst(n, 0xee);
    auto r = DecodeEnvelopeInto(AsBytes(kKey), v, dst);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    EXPECT_EQ(r->kind, RecordKind::kOpaqueChunk);
    EXPECT_EQ(dst, payload);
    EXPECT_EQ(r->payload.data(), v.data() + 24);
  }
}

TEST(DecodeEnvelopeInto, FeedsTheBlobHashTheSameBytesInOrder) {
  // Two chunks of one blob, each spanning several fused pieces.
  const auto blob = RandomBytes(5 * kFusedPiece + 99, 7);
  const size_t cut = 2 * kFusedPiece + 5;
  BlobHasher fused;
  std::vector<uint8_t> dst(blob.size());
  for (auto [off, n] : {std::pair<size_t, size_t>{0, cut}, {cut, blob.size() - cut}}) {
    const std::vector<uint8_t> chunk(blob.begin() + off, blob.begin() + off + n);
    const auto v = Envelope(chunk);
    ASSERT_TRUE(DecodeEnvelopeInto(AsBytes(kKey), v, std::span(dst).subspan(off, n), &fused).ok());
  }
  EXPECT_EQ(dst, blob);
  EXPECT_EQ(fused.Digest(), BlobHasher::Hash(blob));
}

// CopyEnvelopeRange: every header check, the range copied, and no record
// checksum (its caller's layer digest covers the bytes).
TEST(CopyEnvelopeRange, CopiesTheRangeAfterTheHeaderChecksOnly) {
  const auto blob = RandomBytes(2 * kFusedPiece + 300, 11);
  const auto v = Envelope(blob);
  std::vector<uint8_t> dst(kFusedPiece + 50);
  ASSERT_TRUE(CopyEnvelopeRange(v, 100, dst, nullptr).ok());
  EXPECT_TRUE(std::equal(dst.begin(), dst.end(), blob.begin() + 100));
  // A payload flip is not this call's to find: the bytes come as stored.
  auto flipped = v;
  flipped[24 + 120] ^= 1;
  ASSERT_TRUE(CopyEnvelopeRange(flipped, 100, dst, nullptr).ok());
  EXPECT_EQ(dst[20], static_cast<uint8_t>(blob[120] ^ 1));
  // The header is checked as DecodeEnvelope checks it.
  auto bad_magic = v;
  bad_magic[0] ^= 1;
  EXPECT_ERROR(CopyEnvelopeRange(bad_magic, 0, dst, nullptr), kCorruption, "bad magic");
  auto truncated = v;
  truncated.pop_back();
  EXPECT_ERROR(CopyEnvelopeRange(truncated, 0, dst, nullptr), kCorruption, "length mismatch");
  EXPECT_ERROR(CopyEnvelopeRange(v, blob.size() - 10, dst, nullptr), kCorruption, "too short");
}

TEST(DecodeEnvelope, FeedsTheBlobHashWhenAsked) {
  const auto blob = RandomBytes(3 * kFusedPiece + 7, 9);
  const auto v = Envelope(blob);
  BlobHasher fused;
  auto r = DecodeEnvelope(AsBytes(kKey), v, &fused);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(fused.Digest(), BlobHasher::Hash(blob));
  auto flipped = v;
  flipped[24 + 2 * kFusedPiece] ^= 1;
  BlobHasher unused;
  EXPECT_ERROR(DecodeEnvelope(AsBytes(kKey), flipped, &unused), kCorruption, "checksum mismatch");
}

TEST(DecodeEnvelopeInto, DetectsAFlipInEveryPieceOfALargePayload) {
  const auto good = Envelope(RandomBytes(2 * kFusedPiece + 100, 8));
  for (size_t at : {size_t{24}, 24 + kFusedPiece - 1, 24 + kFusedPiece, 24 + 2 * kFusedPiece,
                    good.size() - 1}) {
    SCOPED_TRACE(at);
    auto v = good;
    v[at] ^= 0x80;
    std::vector<uint8_t> dst(good.size() - 24);
    EXPECT_ERROR(DecodeEnvelopeInto(AsBytes(kKey), v, dst), kCorruption, "checksum mismatch");
    EXPECT_ERROR(DecodeEnvelope(AsBytes(kKey), v), kCorruption, "checksum mismatch");
  }
}

TEST(DecodeEnvelopeInto, DestinationOfAnotherSizeIsRejected) {
  const auto v = Envelope(RandomBytes(10, 9));
  std::vector<uint8_t> small(9), large(11);
  EXPECT_ERROR(DecodeEnvelopeInto(AsBytes(kKey), v, small), kCorruption,
               "record payload is 10 bytes where 9 were expected");
  EXPECT_ERROR(DecodeEnvelopeInto(AsBytes(kKey), v, large), kCorruption,
               "record payload is 10 bytes where 11 were expected");
}

TEST(DecodeEnvelopeInto, EmptyPayloadIntoEmptyDestination) {
  const auto v = Envelope({});
  auto r = DecodeEnvelopeInto(AsBytes(kKey), v, std::span<uint8_t>());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->payload.empty());
}

// ---- RecordKind --------------------------------------------------------------------------------

TEST(RecordKind, PersistedValuesAreNeverRenumbered) {
  static_assert(static_cast<uint8_t>(RecordKind::kQsaChunk) == 1);
  static_assert(static_cast<uint8_t>(RecordKind::kDsaChunk) == 2);
  static_assert(static_cast<uint8_t>(RecordKind::kOpaqueChunk) == 3);
  static_assert(static_cast<uint8_t>(RecordKind::kManifest) == 0x10);
  static_assert(static_cast<uint8_t>(RecordKind::kNamespace) == 0x11);
  static_assert(static_cast<uint8_t>(RecordKind::kStoreMeta) == 0x12);
  static_assert(static_cast<uint8_t>(RecordKind::kRun) == 0x13);
  static_assert(static_cast<uint8_t>(RecordKind::kPageRef) == 0x14);
  for (int raw = 0; raw < 256; ++raw) {
    const bool known = (raw >= 1 && raw <= 3) || (raw >= 0x10 && raw <= 0x14);
    EXPECT_EQ(IsKnownRecordKind(static_cast<uint8_t>(raw)), known) << raw;
  }
}

TEST(RecordKind, LayerChunksReuseTheBlobKindNumbers) {
  EXPECT_EQ(ChunkRecordKind(Kind::kQsa), RecordKind::kQsaChunk);
  EXPECT_EQ(ChunkRecordKind(Kind::kDsa), RecordKind::kDsaChunk);
  EXPECT_EQ(ChunkRecordKind(Kind::kOpaque), RecordKind::kOpaqueChunk);
}

}  // namespace
}  // namespace auxstore
