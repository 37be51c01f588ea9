// Every decoder refuses every truncation of a good value as Corruption, with
// a message that says what is short: one parameterized test over the record
// envelope, the QSA and DSA blobs, the manifest (with and without a token
// digest) and the namespace record (docs/format.md).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "format/envelope.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"
#include "tests/format/manifest_sample.h"
#include "tests/format/test_util.h"

namespace auxstore {
namespace {

using test::AsBytes;
using test::RandomBytes;

std::vector<uint8_t> Bytes(const std::string& s) { return {s.begin(), s.end()}; }

constexpr QsaGeometry kQsa{
    .hd = 4, .max_tokens = 8, .ratio = 2, .rot = 2, .theta = 1e4f, .eps = 1e-6f};
constexpr DsaGeometry kDsa{.index_head_dim = 2, .capacity = 4};
const std::string kKey = "record-key-0001";

struct TruncationCase {
  const char* name;
  std::function<std::vector<uint8_t>()> good;
  std::function<Status(ByteSpan)> decode;
  // The message a truncation to n bytes gives (a substring of it).
  std::function<std::string(size_t n)> message;
};

const TruncationCase kCases[] = {
    {"Envelope",
     [] {
       return Bytes(EncodeEnvelope(AsBytes(kKey), RecordKind::kOpaqueChunk, RandomBytes(10, 6)));
     },
     [](ByteSpan v) {
       // Both entry points, and they agree.
       const Status plain = DecodeEnvelope(AsBytes(kKey), v).status();
       std::vector<uint8_t> dst(v.size() >= 24 ? v.size() - 24 : 0);
       EXPECT_EQ(plain, DecodeEnvelopeInto(AsBytes(kKey), v, dst).status());
       return plain;
     },
     [](size_t n) {
       return n < 24
                  ? "record truncated: " + std::to_string(n) + " bytes, an envelope header needs 24"
                  : "record length mismatch: header says 10 payload bytes, value holds " +
                        std::to_string(n - 24) + " (truncated)";
     }},
    {"QsaBlob", [] { return EncodeQsaBlob(3, 1, RandomBytes(3 * 4 * 2, 1), 4).value(); },
     [](ByteSpan v) { return DecodeQsaBlob(v, kQsa).status(); },
     [](size_t n) {
       return n < 16 ? "QSA aux blob truncated: " + std::to_string(n) + " bytes"
                     : "QSA aux blob size mismatch: " + std::to_string(n) + " bytes for 3 tokens";
     }},
    {"DsaBlob",
     [] {
       return EncodeDsaBlob(2, 2, RandomBytes(8, 7), RandomBytes(8, 8), RandomBytes(2, 9)).value();
     },
     [](ByteSpan v) { return DecodeDsaBlob(v, kDsa).status(); },
     [](size_t n) {
       return n < 16 ? "DSA aux blob truncated: " + std::to_string(n) +
                           " bytes, need at least 16 for the header"
                     : "DSA aux blob size mismatch: " + std::to_string(n) +
                           " bytes for 2 rows at head_dim 2, expected 34";
     }},
    {"Manifest", [] { return Bytes(EncodeManifest(test::Sample(false))); },
     [](ByteSpan v) { return DecodeManifest(v).status(); },
     [](size_t) { return std::string("manifest truncated"); }},
    {"ManifestWithTokenDigest", [] { return Bytes(EncodeManifest(test::Sample(true))); },
     [](ByteSpan v) { return DecodeManifest(v).status(); },
     [](size_t) { return std::string("manifest truncated"); }},
    {"NamespaceRecordV2",
     [] {
       NamespaceSpec s;
       s.model_id = "model";
       s.qsa = {64, 1024, 4, 32, 10000.0f, 1e-6f};
       s.dsa = {32, 1024};
       s.weight_revision = "sha256:abcd";
       s.tp_rank = 1;
       s.tp_world_size = 4;
       s.opaque_layers = {{3, DType::kF32, {2, 16}}, {7, DType::kBf16, {1, 4, 8}}};
       return Bytes(internal::EncodeNamespaceSpec(s));
     },
     [](ByteSpan v) { return internal::DecodeNamespaceSpec(v).status(); },
     [](size_t) { return std::string(); }},  // any message: it is Corruption that counts
};

class EveryTruncation : public ::testing::TestWithParam<TruncationCase> {};

TEST_P(EveryTruncation, IsCorruptionNamingWhatIsShort) {
  const TruncationCase& c = GetParam();
  const std::vector<uint8_t> good = c.good();
  ASSERT_TRUE(c.decode(good).ok()) << "the untruncated value must decode";
  for (size_t n = 0; n < good.size(); ++n) {
    SCOPED_TRACE(::testing::Message() << c.name << " cut to " << n << " of " << good.size());
    EXPECT_TRUE(
        test::IsError(c.decode(ByteSpan(good).first(n)), StatusCode::kCorruption, c.message(n)));
  }
}

INSTANTIATE_TEST_SUITE_P(Decoders, EveryTruncation, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<TruncationCase>& p) {
                           return std::string(p.param.name);
                         });

}  // namespace
}  // namespace auxstore
