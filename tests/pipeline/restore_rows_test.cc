// Row ranges through the pipeline (RestoreOptions::rows): an engine that
// holds rows [0, N) of a sequence on its device restores rows [N, M) into
// the same states, only those rows uploaded, and ends with exactly what a
// whole restore gives (raw rows, re-pooled block keys, counters).
#include <gtest/gtest.h>

#include "tests/pipeline/pipeline_fixture.h"

namespace auxstore {
namespace {

using testing::PipelineFixture;
using testing::PrefixFromSeed;
using testing::Sequence;

class RestoreRowsTest : public PipelineFixture {
 protected:
  // Restores rows [first, last) of `targets` and waits.
  Status RestoreRows(GpuPipeline& p, const Prefix& prefix, RestoreTargets targets, uint64_t first,
                     uint64_t last) {
    RestoreOptions o;
    o.stream = stream_;
    o.rows = RestoreOptions::Rows{first, last};
    return p.StartRestore(ns_, prefix, std::move(targets), o)->Wait();
  }
  static uint64_t Rows(const SeqState& s) {
    return s.kind() == Kind::kQsa ? static_cast<const QsaSeqState&>(s).ingested()
                                  : static_cast<const DsaSeqState&>(s).len();
  }
};

TEST_F(RestoreRowsTest, RangesOneAfterAnotherEndAsAWholeRestore) {
  auto p = MakePipeline();
  Sequence src = Filled(1);
  const Prefix prefix = PrefixFromSeed(1);
  ASSERT_TRUE(p->Snapshot(ns_, prefix, 301, src.sources(), stream_).ok());
  ASSERT_TRUE(p->Flush().ok());
  const uint64_t dsa_rows = Rows(*src.layers[1]);
  ASSERT_GT(dsa_rows, 60u);

  // QSA layer 0 and DSA layer 1 in three steps; QSA alone at the end.
  Sequence dst = Fresh();
  RestoreTargets both = {{0, dst.layers[0].get()}, {1, dst.layers[1].get()}};
  gpu_.h2d_bytes = 0;
  ASSERT_TRUE(RestoreRows(*p, prefix, both, 0, 60).ok());
  EXPECT_EQ(gpu_.h2d_bytes.load(), 60u * 64 * 2 + 60u * (32 * 2 * 2 + 1))
      << "only rows [0, 60) were uploaded";
  EXPECT_EQ(Rows(*dst.layers[0]), 60u);
  EXPECT_EQ(static_cast<QsaSeqState&>(*dst.layers[0]).pooled(), 60u / 8);
  ASSERT_TRUE(RestoreRows(*p, prefix, both, 60, dsa_rows).ok());
  Status st = RestoreRows(*p, prefix, {{0, dst.layers[0].get()}}, dsa_rows, 301);
  ASSERT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(Rows(*dst.layers[1]), dsa_rows);

  // The same as a whole restore into fresh states, block keys included.
  Sequence whole = Fresh();
  ASSERT_TRUE(p->Restore(ns_, prefix, whole.targets(), stream_).get().ok());
  Sequence got;
  got.layers[0] = std::move(dst.layers[0]);
  got.layers[1] = std::move(dst.layers[1]);
  Sequence want;
  want.layers[0] = std::move(whole.layers[0]);
  want.layers[1] = std::move(whole.layers[1]);
  ExpectSame(want, got);
  EXPECT_EQ(static_cast<QsaSeqState&>(*got.layers[0]).pooled(), 301u / 8);
}

TEST_F(RestoreRowsTest, RangesThatDoNotFitAreRefusedAndMoveNothing) {
  auto p = MakePipeline();
  Sequence src = Filled(2);
  const Prefix prefix = PrefixFromSeed(2);
  ASSERT_TRUE(p->Snapshot(ns_, prefix, 301, src.sources(), stream_).ok());
  ASSERT_TRUE(p->Flush().ok());
  Sequence dst = Fresh();
  gpu_.h2d_calls = 0;
  // A target holding other rows than the range starts at (here none).
  Status st = RestoreRows(*p, prefix, {{0, dst.layers[0].get()}}, 10, 20);
  EXPECT_TRUE(st.IsInvalidArgument() && st.message().find("holds 0 rows") != std::string::npos)
      << st.ToString();
  // Past the snapshot's rows.
  st = RestoreRows(*p, prefix, {{0, dst.layers[0].get()}}, 0, 302);
  EXPECT_TRUE(st.IsInvalidArgument() && st.message().find("301 rows") != std::string::npos)
      << st.ToString();
  // An opaque layer has no rows.
  st = RestoreRows(*p, prefix, {{2, dst.layers[2].get()}}, 0, 10);
  EXPECT_TRUE(st.IsInvalidArgument() && st.message().find("opaque") != std::string::npos)
      << st.ToString();
  EXPECT_EQ(gpu_.h2d_calls.load(), 0) << "nothing uploaded";
  EXPECT_TRUE(dst.all_fresh());
  EXPECT_EQ(store_->quarantines.load(), 0);
  // An empty range of a fresh state: nothing to upload, counters stay 0.
  ASSERT_TRUE(RestoreRows(*p, prefix, {{0, dst.layers[0].get()}}, 0, 0).ok());
  EXPECT_TRUE(dst.all_fresh());
}

}  // namespace
}  // namespace auxstore
