// A restore through the pipeline meets real damage: bytes flipped inside a
// records SST on disk, read back through the real store (not a test double
// that quarantines by itself). The restore fails with Corruption, no target
// is touched, and the store, not the pipeline, quarantines the snapshot.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "store/keys.h"
#include "tests/pipeline/pipeline_fixture.h"
#include "tests/store/record_damage.h"

namespace auxstore {
namespace {

using testing::PipelineFixture;
using testing::PrefixFromSeed;
using testing::Sequence;

class PipelineDamageTest : public PipelineFixture {
 protected:
  // Reopens the fixture's store so every put is ingested as a table file:
  // the layers then live on disk, where a test can damage them.
  void ReopenIngestingEverything() {
    store_.reset();
    real_store_.reset();
    Options o;
    o.chunk_bytes = 4096;
    o.ingest_threshold_bytes = 1;
    o.background_maintenance = false;
    auto s = Store::Open(o, dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    real_store_ = std::move(*s);
    store_ = std::make_unique<testing::ForwardingStore>(*real_store_);
  }

  // Flips one byte in each 4 KiB of the first half of the largest table file
  // (its data blocks; the index and footer are at the end). Returns the file.
  std::string DamageLargestTable() {
    namespace fs = std::filesystem;
    fs::path largest;
    uintmax_t size = 0;
    for (const auto& e : fs::directory_iterator(dir_.path())) {
      if (e.path().extension() == ".sst" && e.file_size() > size) {
        size = e.file_size();
        largest = e.path();
      }
    }
    std::fstream f(largest, std::ios::in | std::ios::out | std::ios::binary);
    for (uintmax_t at = 100; at < size / 2; at += 4096) {
      f.seekg(static_cast<std::streamoff>(at));
      char c = 0;
      f.get(c);
      f.seekp(static_cast<std::streamoff>(at));
      f.put(static_cast<char>(c ^ 0x5a));
    }
    return largest.string();
  }
};

TEST_F(PipelineDamageTest, DamagedBytesOnDiskFailTheRestoreAndTheStoreQuarantinesIt) {
  ReopenIngestingEverything();
  auto p = GpuPipeline::Create(*store_, gpu_, PipelineOptions{});
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  Sequence src = Filled(9);
  const Prefix prefix = PrefixFromSeed(9);
  ASSERT_TRUE((*p)->Snapshot(ns_, prefix, 301, src.sources(), stream_).ok());
  ASSERT_TRUE((*p)->Flush().ok());
  {  // undamaged, it restores exactly
    Sequence dst = Fresh();
    ASSERT_TRUE((*p)->Restore(ns_, prefix, dst.targets(), stream_).get().ok());
    ExpectSame(src, dst);
  }
  const std::string damaged = DamageLargestTable();
  const uint64_t quarantines_before = real_store_->Stats().quarantines;

  Sequence dst = Fresh();
  Status st = (*p)->Restore(ns_, prefix, dst.targets(), stream_).get();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString() << " (damaged " << damaged << ")";
  EXPECT_TRUE(dst.all_fresh()) << "a failed restore moved a target's counters";
  EXPECT_EQ(real_store_->Stats().quarantines, quarantines_before + 1)
      << "the real store did not quarantine the damaged snapshot";
  EXPECT_TRUE(real_store_->GetManifest(ns_, prefix).status().IsNotFound());
  EXPECT_EQ(store_->quarantines.load(), 0)
      << "the pipeline asked for a quarantine itself; the store's read already did";
  EXPECT_EQ((*p)->stats().restores_failed, 1u);
}

// A record altered under an intact block (its own checksum wrong, RocksDB's
// right) in a layer's first piece: the restore checks pieces through the
// layer digest alone (PieceChecks::kLayerDigest), so the damage is found at
// the layer's last piece, before anything commits: the restore fails, no
// target moves, and the store names and quarantines the damaged record.
TEST_F(PipelineDamageTest, ARecordAlteredBeforeALayersLastPieceFailsTheRestoreAndIsQuarantined) {
  Sequence src = Filled(10);
  const Prefix prefix = PrefixFromSeed(10);
  {
    auto p = MakePipeline();
    ASSERT_TRUE(p->Snapshot(ns_, prefix, 301, src.sources(), stream_).ok());
    ASSERT_TRUE(p->Flush().ok());
  }
  const PutId put = real_store_->GetManifest(ns_, prefix).value().put_id;
  store_.reset();
  real_store_.reset();
  // Layer 2 is opaque, 5000 bytes: chunks 0 (4096 bytes) and 1.
  testing::RewriteRecord(dir_.path(), store_internal::RecordKey(ns_, put, 2, 0, 0),
                         [](std::string* v) { (*v)[v->size() / 2] ^= 0x10; });
  Options o;
  o.chunk_bytes = 4096;
  auto s = Store::Open(o, dir_.path());
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  real_store_ = std::move(*s);
  store_ = std::make_unique<testing::ForwardingStore>(*real_store_);

  auto p = MakePipeline();
  Sequence dst = Fresh();
  Status st = p->Restore(ns_, prefix, dst.targets(), stream_).get();
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find("layer 2 array 0 chunk 0"), std::string::npos) << st.message();
  EXPECT_TRUE(dst.all_fresh()) << "a failed restore moved a target's counters";
  EXPECT_EQ(real_store_->Stats().quarantines, 1u);
  EXPECT_TRUE(real_store_->GetManifest(ns_, prefix).status().IsNotFound());
  EXPECT_EQ(store_->quarantines.load(), 0) << "the store's read quarantined it, not the pipeline";
}

}  // namespace
}  // namespace auxstore
