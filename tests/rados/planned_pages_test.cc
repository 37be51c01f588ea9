// PlanPages and PlanPut (store/shared/planned_pages.h): the pages a kThrough
// put sends to the pool while its local commit runs are exactly the pages
// CutLayer makes of the manifest a real local put commits, for every shape
// of put; the manifest a put with no local copy commits to the pool is the
// one a real local put commits; and a put the local store refuses plans
// nothing, with the local put's own error. No cluster needed.
#include "store/shared/planned_pages.h"

#include <gtest/gtest.h>

#include "auxstore/blob_codecs.h"
#include "auxstore/prefix.h"
#include "store/shared/shared_record.h"
#include "tests/support/test_util.h"

namespace auxstore::shared {
namespace {

using testing::DsaBlob;
using testing::QsaBlob;
using testing::RandomBytes;

constexpr uint32_t kBlockSize = 16;
const uint32_t kChunkBytes = Options{}.chunk_bytes;  // the local store's

struct Put {
  uint64_t tokens = 0;
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<LayerBlob> layers;
  std::vector<Prefix> chain;
  PutOptions options;
};

class PlannedPagesTest : public ::testing::Test {
 protected:
  void OpenWith(const NamespaceSpec& spec) {
    spec_ = spec;
    auto s = Store::Open(Options{}, dir_.path());
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    store_ = std::move(s).value();
    auto ns = store_->RegisterNamespace(spec_);
    ASSERT_TRUE(ns.ok()) << ns.status().ToString();
    ns_ = *ns;
  }

  // QSA (layer 3), DSA (layer 1) and opaque (layer 7, `opaque_bytes`) layers
  // of `tokens` tokens, given out of layer order; chained over the first
  // `chain_tokens` when that is not 0.
  Put Make(uint64_t tokens, uint64_t chain_tokens, size_t opaque_bytes, uint64_t seed) {
    Put p;
    p.tokens = tokens;
    p.blobs = {QsaBlob(spec_, tokens, tokens / spec_.qsa.ratio, seed), DsaBlob(spec_, tokens, seed),
               RandomBytes(opaque_bytes, seed + 1)};
    p.layers = {
        {3, Kind::kQsa, p.blobs[0]}, {1, Kind::kDsa, p.blobs[1]}, {7, Kind::kOpaque, p.blobs[2]}};
    if (chain_tokens) {
      std::vector<uint32_t> ids(tokens);
      for (uint64_t t = 0; t < tokens; ++t) ids[t] = static_cast<uint32_t>(t * 7 + 1);
      p.chain = PrefixHashes(std::span(ids).first(chain_tokens), kBlockSize, 0);
      p.options.block_chain = p.chain;
      p.options.block_size = kBlockSize;
    }
    return p;
  }

  // Puts `p` locally and expects the plan to be the cut of the manifest it
  // committed, piece by piece (the same bytes of the caller's layers).
  void ExpectPlanIsTheCommittedCut(const Put& p, const Prefix& prefix) {
    auto plan = PlanPages(spec_, p.tokens, p.layers, p.options, kChunkBytes);
    ASSERT_TRUE(plan.ok()) << plan.status().ToString();
    ASSERT_TRUE(store_->PutSnapshot(ns_, prefix, p.tokens, p.layers, p.options).ok());
    auto m = store_->GetManifest(ns_, prefix);
    ASSERT_TRUE(m.ok()) << m.status().ToString();
    std::vector<ByteSpan> cut;
    for (const LayerEntry& e : m->layers) {
      ByteSpan blob;
      for (const LayerBlob& l : p.layers)
        if (l.layer == e.layer) blob = l.bytes;
      for (const Range& r : CutLayer(*m, e)) cut.push_back(blob.subspan(r.offset, r.bytes));
    }
    ASSERT_EQ(plan->size(), cut.size());
    for (size_t i = 0; i < cut.size(); ++i) {
      EXPECT_EQ((*plan)[i].data(), cut[i].data()) << "piece " << i;
      EXPECT_EQ((*plan)[i].size(), cut[i].size()) << "piece " << i;
    }
  }

  testing::TempDir dir_;
  NamespaceSpec spec_;
  std::unique_ptr<Store> store_;
  NamespaceId ns_ = 0;
};

TEST_F(PlannedPagesTest, ChainedPutsSharingPagesArePlannedAsTheirManifestsAreCut) {
  OpenWith(testing::TestSpec());
  // The same tokens growing: later puts read their first pages from earlier
  // puts' records, and the cut must not care who stored a page.
  Put a = Make(128, 128, 100, 1), b = Make(256, 256, 100, 1), c = Make(392, 384, 100, 1);
  ExpectPlanIsTheCommittedCut(a, a.chain.back());
  ExpectPlanIsTheCommittedCut(b, b.chain.back());
  ExpectPlanIsTheCommittedCut(c, c.chain.back());  // 8 rows past the chain: a tail
  Put partial = Make(128, 48, 100, 5);             // a chain over the first 3 blocks only
  ExpectPlanIsTheCommittedCut(partial, partial.chain.back());
}

TEST_F(PlannedPagesTest, PagesOfTheNamespaceNotTheBlockAndUnchainedPutsWhole) {
  NamespaceSpec spec = testing::TestSpec();
  spec.page_tokens = 3 * kBlockSize;
  OpenWith(spec);
  Put paged = Make(200, 192, 100, 2);
  ExpectPlanIsTheCommittedCut(paged, paged.chain.back());
  // No chain: whole arrays, and an opaque layer of 9 MiB in pieces of at most 4 MiB.
  Put whole = Make(200, 0, 9u << 20, 3);
  ExpectPlanIsTheCommittedCut(whole, testing::PrefixFromSeed(3));
}

TEST_F(PlannedPagesTest, APutTheLocalStoreRefusesPlansNothing) {
  OpenWith(testing::TestSpec());
  auto refused = [&](const Put& p, const std::string& what) {
    const Status st =
        store_->PutSnapshot(ns_, testing::PrefixFromSeed(9), p.tokens, p.layers, p.options);
    EXPECT_FALSE(st.ok()) << what;
    auto pages = PlanPages(spec_, p.tokens, p.layers, p.options, kChunkBytes);
    ASSERT_FALSE(pages.ok()) << what;
    EXPECT_EQ(pages.status().ToString(), st.ToString()) << what;
    auto put = PlanPut(spec_, p.tokens, p.layers, p.options, kChunkBytes, 7, true);
    ASSERT_FALSE(put.ok()) << what;
    EXPECT_EQ(put.status().ToString(), st.ToString()) << what;
  };
  Put twice = Make(128, 128, 10, 4);
  twice.layers[1].layer = 3;
  refused(twice, "a layer twice");
  Put unknown = Make(128, 128, 10, 4);
  unknown.layers[2].kind = static_cast<Kind>(9);
  refused(unknown, "an unknown kind");
  Put short_qsa = Make(128, 128, 10, 4);
  short_qsa.layers[0].bytes = short_qsa.layers[0].bytes.first(short_qsa.layers[0].bytes.size() - 1);
  refused(short_qsa, "a QSA blob a byte short");
  Put long_chain = Make(128, 128, 10, 4);
  const std::vector<Prefix> longer = Make(256, 256, 10, 4).chain;
  long_chain.options.block_chain = longer;
  refused(long_chain, "a chain longer than the tokens");
  Put none;
  none.tokens = 16;
  refused(none, "no layers");
  NamespaceSpec odd = testing::TestSpec();
  odd.page_tokens = kBlockSize + 8;
  Put p = Make(128, 128, 10, 4);
  auto pages = PlanPages(odd, p.tokens, p.layers, p.options, kChunkBytes);
  ASSERT_FALSE(pages.ok()) << "a page not a whole number of blocks";
  EXPECT_EQ(pages.status().code(), StatusCode::kInvalidArgument) << pages.status().ToString();
}

// A put with Options::shared_local_copies off commits PlanPut's manifest to
// the pool without a local put: it must be the manifest a local put of the
// same layers commits (the layer digests every reader checks included),
// whatever the shape; only the put id, which owns every page, is its own.
TEST_F(PlannedPagesTest, ThePlannedManifestIsTheOneALocalPutCommits) {
  NamespaceSpec spec = testing::TestSpec();
  spec.page_tokens = 2 * kBlockSize;
  OpenWith(spec);
  struct Shape {
    uint64_t tokens, chain_tokens;
    size_t opaque_bytes;
    std::string what;
  };
  const std::vector<Shape> shapes = {
      {128, 128, 100, "chained"},
      {200, 192, 100, "chained, 8 rows of tail"},
      {160, 48, 100, "a chain over part of the rows"},
      {200, 0, 9u << 20, "no chain, a 9 MiB opaque layer"},
  };
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape& shape = shapes[i];
    const std::string& what = shape.what;
    const Put p = Make(shape.tokens, shape.chain_tokens, shape.opaque_bytes, i + 1);
    PutOptions options = p.options;
    options.created_unix_ms = 1'700'000'000'000;
    const std::vector<uint32_t> ids = {1, 2, 3};
    options.token_digest = DigestTokens(ids, p.tokens);
    const Prefix prefix = testing::PrefixFromSeed(100 + i);
    ASSERT_TRUE(store_->PutSnapshot(ns_, prefix, p.tokens, p.layers, options).ok()) << what;
    auto committed = store_->GetManifest(ns_, prefix);
    ASSERT_TRUE(committed.ok()) << committed.status().ToString();
    auto plan = PlanPut(spec_, p.tokens, p.layers, options, kChunkBytes, committed->put_id, true);
    ASSERT_TRUE(plan.ok()) << what << ": " << plan.status().ToString();
    EXPECT_EQ(plan->manifest, *committed) << what;
    ASSERT_EQ(plan->layers.size(), committed->layers.size()) << what;
    for (size_t k = 0; k < plan->layers.size(); ++k) {
      for (const LayerBlob& l : p.layers) {
        if (l.layer == committed->layers[k].layer) {
          EXPECT_EQ(plan->layers[k].data(), l.bytes.data()) << what << ", layer " << l.layer;
        }
      }
    }
  }
  // Without digests the same manifest, its digests 0 (the pages ahead of a
  // local put need no digest).
  const Put p = Make(128, 128, 100, 1);
  auto plain = PlanPut(spec_, p.tokens, p.layers, p.options, kChunkBytes, 5, false);
  ASSERT_TRUE(plain.ok());
  for (const LayerEntry& e : plain->manifest.layers) EXPECT_EQ(e.xxh3, 0u);
}

}  // namespace
}  // namespace auxstore::shared
