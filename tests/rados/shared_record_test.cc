// SharedRecord (store/shared/shared_record.h): what the pool holds for a
// snapshot round-trips, any damage to it decodes as Corruption, and layers
// are cut at the namespace's page boundaries so chained snapshots share the
// same segments. No cluster needed.
#include "store/shared/shared_record.h"

#include <gtest/gtest.h>

#include "format/manifest.h"

namespace auxstore::shared {
namespace {

SharedRecord Sample() {
  SharedRecord r;
  r.ns = 0x1122334455667788ull;
  r.prefix.bytes.fill(0xab);
  r.spec.model_id = "m";
  r.spec.qsa = {64, 4096, 4, 32, 10000.0f, 1e-6f};
  r.spec.dsa = {32, 4096};
  r.manifest.token_count = 100;
  r.manifest.chunk_bytes = 4u << 20;
  r.manifest.layers.push_back(
      {.layer = 2, .kind = Kind::kOpaque, .bytes = 300, .xxh3 = 9, .rows = 300, .row_bytes = {1}});
  r.block_size = 16;
  r.block_chain.resize(6);
  r.layers.push_back({2,
                      {{rados::PageKey::Of(std::vector<uint8_t>(200, 1)), 200},
                       {rados::PageKey::Of(std::vector<uint8_t>(100, 2)), 100}}});
  return r;
}

TEST(SharedRecordTest, RoundTripsAndNamesEachPageOnce) {
  SharedRecord r = Sample();
  r.layers[0].segments.push_back(r.layers[0].segments[0]);
  r.layers[0].segments[2].bytes = 0;
  r.layers[0].segments[1].bytes = 100;
  auto bytes = EncodeSharedRecord(r);
  auto back = DecodeSharedRecord(bytes, "t");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->ns, r.ns);
  EXPECT_EQ(back->prefix, r.prefix);
  EXPECT_EQ(back->spec.model_id, "m");
  EXPECT_EQ(back->manifest, r.manifest);
  EXPECT_EQ(back->block_chain.size(), 6u);
  EXPECT_EQ(back->Pages().size(), 2u);
}

TEST(SharedRecordTest, EveryTruncationAndAWrongLayerSizeAreCorruption) {
  const auto bytes = EncodeSharedRecord(Sample());
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto r = DecodeSharedRecord(ByteSpan(bytes).first(n), "t");
    EXPECT_EQ(r.status().code(), StatusCode::kCorruption) << "truncated at " << n;
  }
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_EQ(DecodeSharedRecord(longer, "t").status().code(), StatusCode::kCorruption);
  SharedRecord wrong = Sample();
  wrong.layers[0].segments[1].bytes = 99;
  EXPECT_EQ(DecodeSharedRecord(EncodeSharedRecord(wrong), "t").status().code(),
            StatusCode::kCorruption);
}

TEST(SharedRecordTest, ChainedSnapshotsAreCutIntoTheSamePageSegments) {
  // A QSA-like layer: 16-byte header, one array of 128-byte rows, pages of 16 rows.
  auto layer = [](uint64_t rows) {
    Manifest m;
    m.page_tokens = 16;
    LayerEntry l{.layer = 0,
                 .kind = Kind::kQsa,
                 .bytes = 16 + rows * 128,
                 .header = std::vector<uint8_t>(16),
                 .rows = rows,
                 .row_bytes = {128}};
    if (rows >= 16) l.runs.push_back({.first_page = 0, .pages = static_cast<uint32_t>(rows / 16)});
    return std::pair{m, l};
  };
  auto [m1, l1] = layer(40);
  auto [m2, l2] = layer(70);
  auto c1 = CutLayer(m1, l1), c2 = CutLayer(m2, l2);
  ASSERT_EQ(c1.size(), 1u + 2 + 1);  // header, pages 0-1, tail of 8 rows
  ASSERT_EQ(c2.size(), 1u + 4 + 1);
  for (size_t i = 0; i < 3; ++i) {  // the header and the two shared pages
    EXPECT_EQ(c1[i].offset, c2[i].offset);
    EXPECT_EQ(c1[i].bytes, c2[i].bytes);
  }
  uint64_t total = 0;
  for (const auto& c : c2) total += c.bytes;
  EXPECT_EQ(total, l2.bytes);
}

TEST(SharedRecordTest, AManifestObjectNameGivesBackItsNamespaceAndPrefix) {
  SharedRecord r = Sample();
  const auto name = rados::ManifestObjectName(SharedId(r.ns, r.prefix));
  auto key = ParseSharedObject(name);
  ASSERT_TRUE(key);
  EXPECT_EQ(key->first, r.ns);
  EXPECT_EQ(key->second, r.prefix);
  EXPECT_FALSE(ParseSharedObject("manifest.xyz"));
  EXPECT_FALSE(ParseSharedObject("page." + std::string(48, '0')));
}

}  // namespace
}  // namespace auxstore::shared
