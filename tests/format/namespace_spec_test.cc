// The namespace identity: what goes into the id, how the record is written,
// and what a spec may not be.
#include "format/namespace_spec.h"

#include <gtest/gtest.h>

#include "auxstore/blob_codecs.h"
#include "auxstore/prefix.h"

namespace auxstore {
namespace {

NamespaceSpec Base() {
  NamespaceSpec s;
  s.model_id = "model";
  s.qsa = {64, 1024, 4, 32, 10000.0f, 1e-6f};
  s.dsa = {32, 1024};
  return s;
}

NamespaceSpec WithIdentity() {
  NamespaceSpec s = Base();
  s.weight_revision = "sha256:abcd";
  s.tp_rank = 1;
  s.tp_world_size = 4;
  s.opaque_layers = {{3, DType::kF32, {2, 16}}, {7, DType::kBf16, {1, 4, 8}}};
  return s;
}

TEST(NamespaceIdentity, KnownAnswerIsPinned) {
  EXPECT_EQ(NamespaceFingerprint(WithIdentity()), 0x019d93da7079a067u);
}

TEST(NamespaceIdentity, EveryIdentityFieldChangesTheId) {
  const NamespaceSpec base = WithIdentity();
  const NamespaceId id = NamespaceFingerprint(base);
  auto differs = [&](auto mutate) {
    NamespaceSpec s = base;
    mutate(s);
    return NamespaceFingerprint(s) != id;
  };
  EXPECT_TRUE(differs([](NamespaceSpec& s) { s.weight_revision = "sha256:abce"; }));
  EXPECT_TRUE(differs([](NamespaceSpec& s) { s.tp_rank = 2; }));
  EXPECT_TRUE(differs([](NamespaceSpec& s) { s.tp_world_size = 8; }));
  EXPECT_TRUE(differs([](NamespaceSpec& s) { s.opaque_layers[0].dtype = DType::kF16; }));
  EXPECT_TRUE(differs([](NamespaceSpec& s) { s.opaque_layers[1].shape[2] = 9; }));
  EXPECT_TRUE(differs([](NamespaceSpec& s) { s.opaque_layers.pop_back(); }));
  // dsa.capacity stays out of the id (a per-deployment reservation).
  EXPECT_FALSE(differs([](NamespaceSpec& s) { s.dsa.capacity = 2048; }));
}

TEST(NamespaceIdentity, ASpecWithoutIdentityFieldsKeepsItsOldIdAndRecord) {
  const NamespaceSpec s = Base();
  EXPECT_FALSE(internal::HasIdentityFields(s));
  const std::string rec = internal::EncodeNamespaceSpec(s);
  // v1: version | len | id | 6 QSA words | 2 DSA words.
  ASSERT_EQ(rec.size(), 4u + 4u + 5u + 8u * 4u);
  EXPECT_EQ(rec[0], 1);
  // Ids registered before the identity fields existed do not move: the
  // fingerprint of a default spec is the pinned known answer of prefix_test.
  NamespaceSpec with_defaults = s;
  with_defaults.tp_rank = 0;
  with_defaults.tp_world_size = 1;
  EXPECT_EQ(NamespaceFingerprint(with_defaults), NamespaceFingerprint(s));
}

TEST(NamespaceIdentity, V2RecordRoundTripsAndALongerOneIsRefused) {
  const NamespaceSpec s = WithIdentity();
  const std::string rec = internal::EncodeNamespaceSpec(s);
  EXPECT_EQ(rec[0], 2);
  const ByteSpan bytes{reinterpret_cast<const uint8_t*>(rec.data()), rec.size()};
  auto back = internal::DecodeNamespaceSpec(bytes);
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->weight_revision, s.weight_revision);
  EXPECT_EQ(back->tp_rank, 1u);
  EXPECT_EQ(back->tp_world_size, 4u);
  EXPECT_EQ(back->opaque_layers, s.opaque_layers);
  EXPECT_EQ(NamespaceFingerprint(*back), NamespaceFingerprint(s));
  // Every truncation: tests/format/truncation_test.cc.
  std::string longer = rec + "x";
  EXPECT_TRUE(internal::DecodeNamespaceSpec(
                  {reinterpret_cast<const uint8_t*>(longer.data()), longer.size()})
                  .status()
                  .IsCorruption());
}

TEST(NamespaceIdentity, ValidationNamesTheBadField) {
  auto why = [](auto mutate) {
    NamespaceSpec s = WithIdentity();
    mutate(s);
    return ValidateNamespaceSpec(s);
  };
  EXPECT_TRUE(ValidateNamespaceSpec(WithIdentity()).ok());
  Status st = why([](NamespaceSpec& s) { s.tp_rank = 4; });
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("rank 4"), std::string::npos) << st.message();
  EXPECT_TRUE(why([](NamespaceSpec& s) { s.tp_world_size = 0; }).IsInvalidArgument());
  st = why([](NamespaceSpec& s) { s.opaque_layers[1].layer = 3; });
  EXPECT_NE(st.message().find("ascending"), std::string::npos) << st.message();
  st = why([](NamespaceSpec& s) { s.opaque_layers[0].dtype = static_cast<DType>(99); });
  EXPECT_NE(st.message().find("dtype 99"), std::string::npos) << st.message();
  st = why([](NamespaceSpec& s) { s.opaque_layers[0].shape = {}; });
  EXPECT_NE(st.message().find("dimensions"), std::string::npos) << st.message();
  st = why([](NamespaceSpec& s) { s.opaque_layers[0].shape = {0}; });
  EXPECT_NE(st.message().find("is 0"), std::string::npos) << st.message();
  st = why([](NamespaceSpec& s) { s.opaque_layers[0].shape = {1ull << 40, 1ull << 40}; });
  EXPECT_NE(st.message().find("overflows"), std::string::npos) << st.message();
}

TEST(NamespaceIdentity, ADeclaredOpaqueLayerMustHaveExactlyItsSize) {
  const NamespaceSpec s = WithIdentity();
  EXPECT_EQ(OpaqueLayerBytes(s.opaque_layers[0]), 2u * 16u * 4u);
  EXPECT_TRUE(CheckLayerBlob(3, Kind::kOpaque, {}, 128, s).ok());
  Status st = CheckLayerBlob(3, Kind::kOpaque, {}, 127, s);
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("f32[2x16] = 128 bytes"), std::string::npos) << st.message();
  // An undeclared opaque layer holds any size.
  EXPECT_TRUE(CheckLayerBlob(4, Kind::kOpaque, {}, 5, s).ok());
}

}  // namespace
}  // namespace auxstore
