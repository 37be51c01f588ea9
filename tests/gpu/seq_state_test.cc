// QSA / DSA / opaque sequence states: snapshot and restore bit-exact (QSA
// incl. the re-pool), every failure path leaves the counters unchanged, and
// release is idempotent and frees every buffer despite a failure.
#include "auxstore/seq_state.h"

#include <gtest/gtest.h>

#include <random>

#include "format/byte_order.h"
#include "gpu/host_backend.h"
#include "gpu/qsa_block_pool_ref.h"
#include "tests/gpu/faulty_backend.h"
#include "tests/gpu/gpu_test_util.h"

namespace auxstore {
namespace {

using namespace std::chrono_literals;

constexpr QsaGeometry kQsa{
    .hd = 64, .max_tokens = 256, .ratio = 8, .rot = 32, .theta = 10000.f, .eps = 1e-6f};
constexpr DsaGeometry kDsa{.index_head_dim = 32, .capacity = 100};

class SeqStateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    q_ = testing::RandomBf16(kQsa.hd, rng_, 0.3f);
    w_ = testing::RandomBf16(kQsa.hd, rng_);
    layer_ = {kQsa, testing::Upload(host_, testing::AsBytes(q_)),
              testing::Upload(host_, testing::AsBytes(w_))};
  }
  void TearDown() override {
    EXPECT_TRUE(host_.Free(layer_.k_pool_k).ok());
    EXPECT_TRUE(host_.Free(layer_.k_norm_w).ok());
  }

  // A QSA state holding `ingested` random raw keys and `pooled` blocks, as
  // the engine's ingest path would leave it.
  std::unique_ptr<QsaSeqState> FilledQsa(uint64_t ingested, uint64_t pooled) {
    auto st = QsaSeqState::Create(host_, layer_);
    EXPECT_TRUE(st.ok());
    raw_ = testing::RandomBf16(ingested * kQsa.hd, rng_);
    EXPECT_TRUE(host_.CopyH2DAsync(testing::AsBytes(raw_), (*st)->raw_keys(), 0, 0).ok());
    if (pooled > 0) {
      QsaBlockPoolArgs a{(*st)->raw_keys(), layer_.k_pool_k,
                         layer_.k_norm_w,   (*st)->block_keys(),
                         ingested,          0,
                         uint32_t(pooled),  kQsa.ratio,
                         kQsa.hd,           kQsa.rot,
                         kQsa.theta,        kQsa.eps};
      EXPECT_TRUE(host_.QsaBlockPool(a, 0).ok());
    }
    EXPECT_TRUE((*st)->SetCounters(ingested, pooled).ok());
    EXPECT_TRUE(host_.Synchronize(0).ok());
    return std::move(*st);
  }

  std::mt19937_64 rng_{11};
  gpu::HostBackend host_{gpu::HostBackendOptions{.op_delay = 200us}};
  std::vector<uint16_t> q_, w_, raw_;
  QsaLayer layer_;
};

TEST_F(SeqStateTest, QsaSnapshotRestoreIsBitExactIncludingRepool) {
  auto src = FilledQsa(203, 25);  // 25 * 8 = 200 <= 203
  auto blob = src->Snapshot(0);
  ASSERT_TRUE(blob.ok()) << blob.status().ToString();
  auto want_blob = EncodeQsaBlob(203, 25, testing::AsBytes(raw_), kQsa.hd);
  ASSERT_TRUE(want_blob.ok());
  EXPECT_EQ(*blob, *want_blob) << "snapshot is the codec's blob";

  auto dst = QsaSeqState::Create(host_, layer_);
  ASSERT_TRUE(dst.ok());
  ASSERT_TRUE((*dst)->Restore(*blob, 0).ok());
  EXPECT_EQ((*dst)->ingested(), 203u);
  EXPECT_EQ((*dst)->pooled(), 25u);
  ASSERT_TRUE(host_.Synchronize(0).ok());
  EXPECT_EQ(testing::Download16(host_, (*dst)->raw_keys(), 203 * kQsa.hd), raw_);
  const auto got_blocks = testing::Download16(host_, (*dst)->block_keys(), 25 * kQsa.hd);
  EXPECT_EQ(got_blocks, testing::Download16(host_, src->block_keys(), 25 * kQsa.hd));
  // And equal to the reference run on the host copy.
  std::vector<uint16_t> ref(25 * kQsa.hd);
  QsaBlockPoolArgs a{.ingested = 203,
                     .start = 0,
                     .n = 25,
                     .ratio = kQsa.ratio,
                     .hd = kQsa.hd,
                     .rot = kQsa.rot,
                     .theta = kQsa.theta,
                     .eps = kQsa.eps};
  ASSERT_TRUE(gpu::QsaBlockPoolReference(a, raw_, q_, w_, ref).ok());
  EXPECT_EQ(got_blocks, ref);
  // A second snapshot of the restored state is the same blob.
  EXPECT_EQ(*(*dst)->Snapshot(0), *blob);
}

TEST_F(SeqStateTest, QsaEmptyAndUnpooledRestore) {
  auto src = FilledQsa(5, 0);
  auto blob = src->Snapshot(0);
  auto dst = QsaSeqState::Create(host_, layer_);
  ASSERT_TRUE((*dst)->Restore(*blob, 0).ok());
  EXPECT_EQ((*dst)->ingested(), 5u);
  EXPECT_EQ((*dst)->pooled(), 0u);
  auto empty = EncodeQsaBlob(0, 0, {}, kQsa.hd);
  auto dst2 = QsaSeqState::Create(host_, layer_);
  ASSERT_TRUE((*dst2)->Restore(*empty, 0).ok());
  EXPECT_TRUE((*dst2)->fresh());
}

// Every refusal leaves (ingested, pooled) as they were, fresh or not.
TEST_F(SeqStateTest, QsaFailuresLeaveCountersUnchanged) {
  auto good = FilledQsa(64, 8);
  auto blob = *good->Snapshot(0);
  testing::FaultyBackend faulty(host_);
  QsaLayer layer = layer_;
  for (bool fresh : {true, false}) {
    auto st = QsaSeqState::Create(faulty, layer);
    ASSERT_TRUE(st.ok());
    if (!fresh) {
      ASSERT_TRUE((*st)->SetCounters(17, 2).ok());
    }
    const uint64_t ing = (*st)->ingested(), pooled = (*st)->pooled();
    auto expect_refused = [&](ByteSpan b, const char* what) {
      Status s = (*st)->Restore(b, 0);
      EXPECT_FALSE(s.ok()) << what;
      EXPECT_EQ((*st)->ingested(), ing) << what;
      EXPECT_EQ((*st)->pooled(), pooled) << what;
    };
    expect_refused(ByteSpan(blob).first(15), "truncated header");
    expect_refused(ByteSpan(blob).first(blob.size() - 2), "size mismatch");
    auto more = blob;
    more.push_back(0);
    expect_refused(more, "trailing byte");
    auto hdr = blob;
    internal::PutLE64(hdr.data(), 1ull << 62);  // ingested*hd*2 wraps
    expect_refused(hdr, "overflowing ingested");
    auto big = *EncodeQsaBlob(257, 0, std::vector<uint8_t>(257 * 128), kQsa.hd);
    expect_refused(big, "ingested > max_tokens");
    hdr = blob;
    internal::PutLE64(hdr.data() + 8, 9);  // 9 * 8 > 64
    expect_refused(hdr, "pooled * ratio > ingested");
    faulty.h2d_calls = 0;
    faulty.fail_h2d_at = 0;
    expect_refused(blob, "failing upload");
    faulty.fail_h2d_at = -1;
    faulty.fail_pool = true;
    expect_refused(blob, "failing re-pool launch");
    faulty.fail_pool = false;
    ASSERT_TRUE((*st)->Restore(blob, 0).ok());
    EXPECT_EQ((*st)->ingested(), 64u);
    EXPECT_EQ((*st)->pooled(), 8u);
  }
  ASSERT_TRUE(host_.Synchronize(0).ok());
}

TEST_F(SeqStateTest, QsaReleaseIsIdempotentAndFreesTheOtherBufferOnFailure) {
  testing::FaultyBackend faulty(host_);
  const size_t before = host_.live_allocations();
  auto st = QsaSeqState::Create(faulty, layer_);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(host_.live_allocations(), before + 2);
  const DevicePtr raw = (*st)->raw_keys();
  faulty.fail_free.insert(raw);
  Status first = (*st)->Release();
  EXPECT_FALSE(first.ok()) << "the first error is returned";
  EXPECT_EQ(host_.live_allocations(), before + 1) << "block keys freed despite the failure";
  EXPECT_EQ((*st)->raw_keys(), kNullDevicePtr);
  EXPECT_EQ((*st)->block_keys(), kNullDevicePtr);
  const int calls = faulty.free_calls;
  EXPECT_TRUE((*st)->Release().ok()) << "second release is a no-op";
  EXPECT_EQ(faulty.free_calls, calls) << "no double free";
  EXPECT_FALSE((*st)->Snapshot(0).ok());
  EXPECT_FALSE((*st)->Restore(*EncodeQsaBlob(0, 0, {}, kQsa.hd), 0).ok());
  st->reset();
  EXPECT_TRUE(host_.Free(raw).ok());  // the injected failure left it allocated
}

TEST_F(SeqStateTest, QsaCreateChecksGeometry) {
  QsaLayer bad = layer_;
  bad.geometry.rot = 7;
  EXPECT_FALSE(QsaSeqState::Create(host_, bad).ok());
  bad = layer_;
  bad.k_norm_w = kNullDevicePtr;
  EXPECT_FALSE(QsaSeqState::Create(host_, bad).ok());
  bad = layer_;
  bad.geometry.max_tokens = 4;  // < ratio: no block-key buffer
  auto st = QsaSeqState::Create(host_, bad);
  ASSERT_TRUE(st.ok());
  EXPECT_EQ((*st)->block_keys(), kNullDevicePtr);
  EXPECT_FALSE((*st)->SetCounters(4, 1).ok());
}

// A geometry whose buffers' byte size overflows is a bad argument, refused
// before anything is allocated (issue 23: never a wrapped size).
TEST_F(SeqStateTest, GeometriesWhoseSizeOverflowsAreInvalidArgument) {
  const DsaGeometry huge{.index_head_dim = UINT32_MAX, .capacity = UINT32_MAX};
  const size_t live = host_.live_allocations();
  auto d = DsaSeqState::Create(host_, huge);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), StatusCode::kInvalidArgument) << d.status().ToString();
  EXPECT_NE(d.status().message().find("overflow"), std::string::npos) << d.status().ToString();
  EXPECT_EQ(host_.live_allocations(), live);
}

std::unique_ptr<DsaSeqState> FilledDsa(GpuBackend& gpu, uint64_t len, std::mt19937_64& rng,
                                       std::vector<uint8_t>* k, std::vector<uint8_t>* g,
                                       std::vector<uint8_t>* v) {
  auto st = DsaSeqState::Create(gpu, kDsa);
  EXPECT_TRUE(st.ok());
  *k = testing::RandomBytes(len * kDsa.index_head_dim * 2, rng);
  *g = testing::RandomBytes(len * kDsa.index_head_dim * 2, rng);
  *v = testing::RandomBytes(len, rng);
  EXPECT_TRUE(gpu.CopyH2DAsync(*k, (*st)->k_normed(), 0, 0).ok());
  EXPECT_TRUE(gpu.CopyH2DAsync(*g, (*st)->gate(), 0, 0).ok());
  EXPECT_TRUE(gpu.CopyH2DAsync(*v, (*st)->valid(), 0, 0).ok());
  EXPECT_TRUE(gpu.Synchronize(0).ok());
  EXPECT_TRUE((*st)->SetLen(len).ok());
  return std::move(*st);
}

TEST_F(SeqStateTest, DsaSnapshotRestoreIsBitExact) {
  std::vector<uint8_t> k, g, v;
  auto src = FilledDsa(host_, 77, rng_, &k, &g, &v);
  auto blob = src->Snapshot(0);
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(*blob, *EncodeDsaBlob(77, kDsa.index_head_dim, k, g, v));
  EXPECT_EQ(blob->size(), 16 + 77 * (4 * 32 + 1));
  auto dst = DsaSeqState::Create(host_, kDsa);
  ASSERT_TRUE((*dst)->Restore(*blob, 0).ok());
  EXPECT_EQ((*dst)->len(), 77u);
  ASSERT_TRUE(host_.Synchronize(0).ok());
  EXPECT_EQ(*(*dst)->Snapshot(0), *blob);
  auto plan = (*dst)->PlanSnapshot();
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->blob_bytes, blob->size());
  EXPECT_TRUE(std::equal(plan->header.begin(), plan->header.end(), blob->begin()));
}

TEST_F(SeqStateTest, DsaFailuresLeaveLenUnchanged) {
  std::vector<uint8_t> k, g, v;
  auto src = FilledDsa(host_, 40, rng_, &k, &g, &v);
  auto blob = *src->Snapshot(0);
  testing::FaultyBackend faulty(host_);
  auto st = DsaSeqState::Create(faulty, kDsa);
  ASSERT_TRUE((*st)->SetLen(3).ok());
  auto refused = [&](ByteSpan b, const char* what) {
    EXPECT_FALSE((*st)->Restore(b, 0).ok()) << what;
    EXPECT_EQ((*st)->len(), 3u) << what;
  };
  refused(ByteSpan(blob).first(8), "truncated header");
  refused(ByteSpan(blob).first(blob.size() - 1), "size mismatch");
  auto other_d = *EncodeDsaBlob(1, 16, std::vector<uint8_t>(32), std::vector<uint8_t>(32),
                                std::vector<uint8_t>(1));
  refused(other_d, "index_head_dim mismatch");
  auto too_long = *EncodeDsaBlob(101, 32, std::vector<uint8_t>(101 * 64),
                                 std::vector<uint8_t>(101 * 64), std::vector<uint8_t>(101));
  refused(too_long, "len > capacity");
  for (int at : {0, 1, 2}) {
    faulty.h2d_calls = 0;
    faulty.fail_h2d_at = at;
    refused(blob, "failing copy");
  }
  faulty.fail_h2d_at = -1;
  ASSERT_TRUE((*st)->Restore(blob, 0).ok());
  EXPECT_EQ((*st)->len(), 40u);
  EXPECT_FALSE((*st)->SetLen(101).ok());
}

TEST_F(SeqStateTest, DsaReleaseFreesAllDespiteFailure) {
  testing::FaultyBackend faulty(host_);
  const size_t before = host_.live_allocations();
  auto st = DsaSeqState::Create(faulty, kDsa);
  const DevicePtr gate = (*st)->gate();
  faulty.fail_free.insert(gate);
  EXPECT_FALSE((*st)->Release().ok());
  EXPECT_EQ(host_.live_allocations(), before + 1);
  EXPECT_TRUE((*st)->Release().ok());
  EXPECT_TRUE(host_.Free(gate).ok());
}

TEST_F(SeqStateTest, OpaqueRoundTripAndCapacity) {
  auto src = OpaqueSeqState::Create(host_, 1000);
  auto bytes = testing::RandomBytes(999, rng_);
  ASSERT_TRUE((*src)->Restore(bytes, 0).ok());
  EXPECT_EQ((*src)->size(), 999u);
  EXPECT_EQ(*(*src)->Snapshot(0), bytes);
  auto small = OpaqueSeqState::Create(host_, 998);
  EXPECT_EQ((*small)->Restore(bytes, 0).code(), StatusCode::kOutOfRange);
  EXPECT_TRUE((*small)->fresh());
}

// ---- engine-owned (borrowed) buffers -------------------------------------

struct EngineQsaBuffers {
  gpu::HostBackend& gpu;
  QsaSeqState::Buffers b;
  explicit EngineQsaBuffers(gpu::HostBackend& g) : gpu(g) {
    b.raw_keys_bytes = uint64_t{kQsa.max_tokens} * kQsa.hd * 2;
    b.block_keys_bytes = uint64_t{kQsa.max_tokens / kQsa.ratio} * kQsa.hd * 2;
    b.raw_keys = *gpu.Alloc(b.raw_keys_bytes);
    b.block_keys = *gpu.Alloc(b.block_keys_bytes);
  }
  ~EngineQsaBuffers() {
    // Still the engine's to free: a borrowed state never freed them.
    EXPECT_TRUE(gpu.Free(b.raw_keys).ok());
    EXPECT_TRUE(gpu.Free(b.block_keys).ok());
  }
};

TEST_F(SeqStateTest, BorrowedQsaBuffersRestoreSnapshotAndAreNeverFreed) {
  auto src = FilledQsa(203, 25);
  auto blob = src->Snapshot(0);
  ASSERT_TRUE(blob.ok());
  EngineQsaBuffers engine(host_);
  {
    auto dst = QsaSeqState::Borrow(host_, layer_, engine.b);
    ASSERT_TRUE(dst.ok()) << dst.status().ToString();
    EXPECT_FALSE((*dst)->owned());
    EXPECT_EQ((*dst)->raw_keys(), engine.b.raw_keys);
    ASSERT_TRUE((*dst)->Restore(*blob, 0).ok());
    EXPECT_EQ((*dst)->ingested(), 203u);
    EXPECT_EQ((*dst)->pooled(), 25u);
    ASSERT_TRUE(host_.Synchronize(0).ok());
    EXPECT_EQ(testing::Download16(host_, engine.b.raw_keys, 203 * kQsa.hd), raw_);
    EXPECT_EQ(*(*dst)->Snapshot(0), *blob);
    ASSERT_TRUE((*dst)->Release().ok());
  }
  // The engine's counters come along: a snapshot of a borrowed state with
  // the engine's own counters is what its ingest wrote.
  auto again = QsaSeqState::Borrow(host_, layer_, engine.b, 203, 25);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*(*again)->Snapshot(0), *blob);
  EXPECT_FALSE((*again)->fresh());
}

TEST_F(SeqStateTest, BorrowRefusesSmallOrNullBuffersAndImpossibleCounters) {
  EngineQsaBuffers engine(host_);
  QsaSeqState::Buffers small = engine.b;
  small.raw_keys_bytes -= 1;
  Status st = QsaSeqState::Borrow(host_, layer_, small).status();
  EXPECT_TRUE(st.IsInvalidArgument());
  EXPECT_NE(st.message().find("raw_keys holds"), std::string::npos) << st.message();
  QsaSeqState::Buffers null_blocks = engine.b;
  null_blocks.block_keys = kNullDevicePtr;
  st = QsaSeqState::Borrow(host_, layer_, null_blocks).status();
  EXPECT_NE(st.message().find("block_keys is null"), std::string::npos) << st.message();
  EXPECT_EQ(QsaSeqState::Borrow(host_, layer_, engine.b, 10, 2).status().code(),
            StatusCode::kOutOfRange);  // 2 blocks of 8 need 16 raw keys

  DsaSeqState::Buffers d;
  d.k_normed_bytes = d.gate_bytes = uint64_t{kDsa.capacity} * kDsa.index_head_dim * 2;
  d.valid_bytes = kDsa.capacity - 1;
  d.k_normed = *host_.Alloc(d.k_normed_bytes);
  d.gate = *host_.Alloc(d.gate_bytes);
  d.valid = *host_.Alloc(kDsa.capacity);
  st = DsaSeqState::Borrow(host_, kDsa, d).status();
  EXPECT_NE(st.message().find("valid holds"), std::string::npos) << st.message();
  d.valid_bytes = kDsa.capacity;
  EXPECT_EQ(DsaSeqState::Borrow(host_, kDsa, d, kDsa.capacity + 1).status().code(),
            StatusCode::kOutOfRange);
  {
    auto ok = DsaSeqState::Borrow(host_, kDsa, d, 7);
    ASSERT_TRUE(ok.ok());
    EXPECT_EQ((*ok)->len(), 7u);
  }
  for (DevicePtr p : {d.k_normed, d.gate, d.valid}) EXPECT_TRUE(host_.Free(p).ok());

  EXPECT_TRUE(OpaqueSeqState::Borrow(host_, kNullDevicePtr, 10).status().IsInvalidArgument());
  DevicePtr o = *host_.Alloc(64);
  EXPECT_EQ(OpaqueSeqState::Borrow(host_, o, 64, 65).status().code(), StatusCode::kOutOfRange);
  { EXPECT_TRUE(OpaqueSeqState::Borrow(host_, o, 64, 64).ok()); }
  EXPECT_TRUE(host_.Free(o).ok());
}

}  // namespace
}  // namespace auxstore
