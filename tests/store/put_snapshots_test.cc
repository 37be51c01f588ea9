// Store::PutSnapshots on the embedded store: each snapshot put exactly as
// PutSnapshot puts it, in order, each with its own outcome; a refused or
// failed one never stops the others.
#include <gtest/gtest.h>

#include "auxstore/store.h"
#include "tests/store/store_test_fixture.h"

namespace auxstore {
namespace {

using testing::DsaBlob;
using testing::PrefixFromSeed;
using testing::QsaBlob;
using testing::RandomBytes;

class PutSnapshotsTest : public testing::StoreFixture {};

TEST_F(PutSnapshotsTest, EachSnapshotIsPutAsPutSnapshotPutsItWithItsOwnOutcome) {
  const NamespaceSpec spec = testing::TestSpec();
  const auto qsa = QsaBlob(spec, 64, 16, 1);
  auto short_dsa = DsaBlob(spec, 64, 2);
  short_dsa.pop_back();
  const auto opaque = RandomBytes(3000, 3);
  const auto big = RandomBytes(300 * 1024, 4);
  const std::vector<LayerBlob> good{{0, Kind::kQsa, qsa}, {1, Kind::kOpaque, opaque}};
  const std::vector<LayerBlob> refused{{0, Kind::kQsa, qsa}, {1, Kind::kDsa, short_dsa}};
  const std::vector<LayerBlob> whole{{5, Kind::kOpaque, big}};
  std::vector<Store::SnapshotPut> puts(5);
  puts[0] = {ns_, PrefixFromSeed(1), 64, good};
  puts[1] = {ns_, PrefixFromSeed(2), 64, refused};
  puts[2] = {ns_ + 1, PrefixFromSeed(3), 64, good};  // a namespace never registered
  puts[3] = {ns_, PrefixFromSeed(4), 1, whole};
  puts[4] = {ns_, PrefixFromSeed(1), 64, good};  // the first again: OK, no write
  puts[3].status = Status::Internal("stale: must be overwritten");
  const Status first = store_->PutSnapshots(puts);
  EXPECT_TRUE(puts[0].status.ok()) << puts[0].status.ToString();
  EXPECT_EQ(puts[1].status.code(), StatusCode::kCorruption) << puts[1].status.ToString();
  EXPECT_EQ(puts[2].status.code(), StatusCode::kNotFound) << puts[2].status.ToString();
  EXPECT_TRUE(puts[3].status.ok()) << puts[3].status.ToString();
  EXPECT_TRUE(puts[4].status.ok()) << puts[4].status.ToString();
  // The first error, naming the snapshot.
  EXPECT_EQ(first.code(), StatusCode::kCorruption);
  EXPECT_NE(first.ToString().find("puts[1]"), std::string::npos) << first.ToString();
  // Exactly what PutSnapshot would have stored.
  auto got = store_->GetLayer(ns_, PrefixFromSeed(1), 1);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, opaque);
  got = store_->GetLayer(ns_, PrefixFromSeed(4), 5);
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(*got, big);
  EXPECT_TRUE(store_->GetManifest(ns_, PrefixFromSeed(2)).status().IsNotFound());
  const StoreStats s = store_->Stats();
  EXPECT_EQ(s.puts, 2u);
  EXPECT_EQ(s.duplicate_puts, 1u);
  // An empty batch: OK, nothing.
  EXPECT_TRUE(store_->PutSnapshots({}).ok());
}

}  // namespace
}  // namespace auxstore
