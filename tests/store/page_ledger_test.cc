// The page ledger (store/page_ledger.h) as specs, on its RocksDB home: what a
// put shares and pins, what it adds with its commit, what a removal releases
// and reclaims, and what the scans compact, verify and repair read see.
#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <memory>
#include <set>
#include <thread>
#include <vector>

#include "format/run_record.h"
#include "store/commit_batch.h"
#include "store/keys.h"
#include "store/page_ledger_rocks.h"
#include "store/rocks/rocks_options.h"
#include "tests/support/test_util.h"

namespace auxstore {
namespace {

namespace si = store_internal;
using testing::PrefixFromSeed;
using testing::TempDir;

constexpr NamespaceId kNs = 7;
constexpr uint32_t kPageTokens = 16;

// A put that stored `pages` pages of one QSA layer (one array of 8-byte
// rows); page p's bytes hash to hashes[p].
RunRecord RunOf(const std::vector<Prefix>& chain, const std::vector<uint64_t>& hashes,
                uint32_t first_page = 0) {
  RunRecord r;
  r.prefix = chain.back();
  r.page_tokens = kPageTokens;
  r.chunk_bytes = 4096;
  r.chain_first_page = first_page;
  r.chain.assign(chain.begin() + first_page, chain.end());
  RunArray a;
  a.row_bytes = 8;
  a.page_xxh3.assign(hashes.begin() + first_page, hashes.end());
  r.layers.push_back(
      {0, Kind::kQsa, first_page, static_cast<uint32_t>(chain.size()) - first_page, {a}});
  return r;
}

class PageLedgerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    setup_ = si::MakeRocksSetup(nullptr, [](const LogRecord&) {});  // quiet
    setup_.db.create_if_missing = true;
    setup_.db.create_missing_column_families = true;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(setup_.db, dir_.Sub("db"), setup_.cfs, &cf_, &raw).ok());
    db_.reset(raw);
    si::LedgerHost host;
    host.commit = [this](si::CommitBatch* b, const std::string&) {
      rocksdb::WriteOptions wo;
      wo.sync = true;
      return db_->Write(wo, &b->rocks).ok() ? Status::Ok() : Status::IOError("commit");
    };
    host.write = [this](si::CommitBatch* b, bool, const std::string&) {
      return db_->Write(rocksdb::WriteOptions(), &b->rocks).ok() ? Status::Ok()
                                                                 : Status::IOError("write");
    };
    host.drop_records = [this](NamespaceId, PutId put) {
      dropped_.insert(put);
      return Status::Ok();
    };
    host.writable = [] { return true; };
    ledger_ = std::make_unique<si::RocksPageLedger>(db_, cf_, std::move(host));
    for (uint64_t i = 0; i < 4; ++i) chain_.push_back(PrefixFromSeed(100 + i));
  }
  void TearDown() override {
    ledger_.reset();
    for (auto* h : cf_) (void)db_->DestroyColumnFamilyHandle(h);
    (void)db_->Close();
  }

  // Commits put `put` of snapshot `prefix`, reading `owners`, storing `run`.
  void Commit(const Prefix& prefix, PutId put, const RunRecord* run,
              std::vector<PutId> owners = {}) {
    si::PutEntries e;
    e.snapshot = {kNs, prefix};
    e.put = put;
    e.run = run;
    e.owners = std::move(owners);
    si::CommitBatch batch;
    ASSERT_TRUE(ledger_
                    ->CommitPut(e, &batch,
                                [&](si::CommitBatch* b) {
                                  return db_->Write(rocksdb::WriteOptions(), &b->rocks).ok()
                                             ? Status::Ok()
                                             : Status::IOError("commit");
                                })
                    .ok());
  }
  std::vector<PutId> Release(PutId self, std::vector<PutId> used) {
    si::CommitBatch batch;
    auto garbage = ledger_->ReleaseSnapshot(kNs, self, used, &batch, [&](si::CommitBatch* b) {
      return db_->Write(rocksdb::WriteOptions(), &b->rocks).ok() ? Status::Ok()
                                                                 : Status::IOError("commit");
    });
    EXPECT_TRUE(garbage.ok()) << garbage.status().ToString();
    return garbage.ok() ? *garbage : std::vector<PutId>{};
  }
  // A put offering `hashes` for pages [0, hashes.size()) of layer 0.
  Result<si::SharedChain> Share(const std::vector<std::vector<uint64_t>>& hashes) {
    si::LayerPages want{0, Kind::kQsa, static_cast<uint32_t>(hashes[0].size()), {8}, &hashes};
    return ledger_->ShareChain(kNs, kPageTokens, chain_, {&want, 1});
  }
  bool HasRun(PutId put) {
    auto r = ledger_->LoadRun(kNs, put);
    return r.ok() && r->has_value();
  }
  size_t PageEntries() {
    size_t n = 0;
    EXPECT_TRUE(ledger_
                    ->ForEachPageEntry([&](const si::PageEntry& e) {
                      n += !e.malformed;
                      return true;
                    })
                    .ok());
    return n;
  }

  TempDir dir_;
  si::RocksSetup setup_;
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> cf_;
  std::unique_ptr<si::RocksPageLedger> ledger_;
  std::vector<Prefix> chain_;
  std::set<PutId> dropped_;
  const std::vector<uint64_t> hashes_{11, 12, 13, 14};
};

TEST_F(PageLedgerTest, AnEmptyLedgerSharesNothingAndPinsNothing) {
  auto shared = Share({hashes_});
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_TRUE(shared->owners.empty());
  EXPECT_EQ(shared->layers[0].own_first, 0u);
  EXPECT_EQ(ledger_->pins(), 0u);
}

TEST_F(PageLedgerTest, APutSharesThePagesAnEarlierPutStoredAndPinsItUntilReleased) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  EXPECT_EQ(PageEntries(), 4u);
  EXPECT_EQ(*ledger_->LeadingStoredPages(kNs, kPageTokens, chain_), 4u);
  {
    auto shared = Share({hashes_});
    ASSERT_TRUE(shared.ok());
    ASSERT_EQ(shared->layers[0].runs.size(), 1u);
    const PageRun& r = shared->layers[0].runs[0];
    EXPECT_EQ(r.owner, 1u);
    EXPECT_EQ(r.first_page, 0u);
    EXPECT_EQ(r.pages, 4u);
    EXPECT_EQ(shared->layers[0].own_first, 4u);
    EXPECT_EQ(shared->owners.count(1), 1u);
    EXPECT_EQ(ledger_->pins(), 1u);
  }
  EXPECT_EQ(ledger_->pins(), 0u);
  EXPECT_TRUE(HasRun(1)) << "its own ref still holds it";
  EXPECT_TRUE(dropped_.empty());
}

TEST_F(PageLedgerTest, SharingStopsAtTheFirstPageWithOtherBytes) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  auto shared = Share({{11, 12, 99, 14}});
  ASSERT_TRUE(shared.ok());
  ASSERT_EQ(shared->layers[0].runs.size(), 1u);
  EXPECT_EQ(shared->layers[0].runs[0].pages, 2u);
  EXPECT_EQ(shared->layers[0].own_first, 2u);
}

TEST_F(PageLedgerTest, ReleasingTheLastRefReclaimsThePutAndItsPageEntries) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  EXPECT_EQ(Release(1, {1}), std::vector<PutId>{1});
  EXPECT_FALSE(HasRun(1));
  EXPECT_EQ(PageEntries(), 0u);
  // The records are the store's to delete, after the commit: the caller
  // was told (the garbage returned), the host was not asked.
  EXPECT_TRUE(dropped_.empty());
}

TEST_F(PageLedgerTest, APutThatSharesHoldsTheOwnerWhenTheOwnersSnapshotGoes) {
  const auto run1 = RunOf(chain_, hashes_);
  Commit(chain_[1], 1, &run1);
  {
    auto shared = Share({hashes_});
    ASSERT_TRUE(shared.ok());
    Commit(chain_.back(), 2, nullptr, {1});  // stores nothing of its own
  }
  EXPECT_TRUE(Release(1, {1}).empty()) << "put 2's ref holds put 1";
  EXPECT_TRUE(HasRun(1));
  EXPECT_EQ(Release(2, {1}), std::vector<PutId>{1});
  EXPECT_FALSE(HasRun(1));
}

TEST_F(PageLedgerTest, APinHeldBlocksReclaimAndTheLastUnpinReclaims) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  auto shared = Share({hashes_});
  ASSERT_TRUE(shared.ok());
  // The owner's last snapshot goes while a put is about to share it.
  EXPECT_TRUE(Release(1, {1}).empty());
  EXPECT_TRUE(HasRun(1));
  // The put fails (never commits): dropping its pin reclaims the owner.
  shared->Release();
  EXPECT_FALSE(HasRun(1));
  EXPECT_EQ(dropped_, std::set<PutId>{1});
  EXPECT_EQ(PageEntries(), 0u);
}

TEST_F(PageLedgerTest, ReclaimIfUnusedTakesOnlyPutsNoRefAndNoPinHolds) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  EXPECT_FALSE(*ledger_->ReclaimIfUnused(kNs, 1)) << "its own ref holds it";
  EXPECT_FALSE(*ledger_->ReclaimIfUnused(kNs, 42)) << "no such put";
  // A ref that no longer holds (its snapshot is another put now) goes.
  std::vector<std::pair<NamespaceId, PutId>> owners;
  auto removed = ledger_->RemoveStaleRefs(
      [](const si::SnapshotId&, PutId) -> Result<bool> { return false; }, &owners);
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 1u);
  ASSERT_EQ(owners.size(), 1u);
  EXPECT_EQ(owners[0].second, 1u);
  EXPECT_TRUE(*ledger_->ReclaimIfUnused(kNs, 1));
  EXPECT_FALSE(HasRun(1));
  EXPECT_EQ(dropped_, std::set<PutId>{1});
}

TEST_F(PageLedgerTest, TheScansNameEveryEntryByItsIds) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  std::vector<si::RunEntry> runs;
  ASSERT_TRUE(ledger_
                  ->ForEachRun([&](const si::RunEntry& e) {
                    runs.push_back(e);
                    return true;
                  })
                  .ok());
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].ns, kNs);
  EXPECT_EQ(runs[0].put, 1u);
  ASSERT_TRUE(runs[0].run.ok());
  EXPECT_EQ(*runs[0].run, run);
  std::vector<si::RefEntry> refs;
  ASSERT_TRUE(ledger_
                  ->ForEachRef([&](const si::RefEntry& e) {
                    refs.push_back(e);
                    return true;
                  })
                  .ok());
  ASSERT_EQ(refs.size(), 1u);
  EXPECT_EQ(refs[0].owner, 1u);
  EXPECT_EQ(refs[0].referrer, 1u);
  EXPECT_EQ(refs[0].snapshot.prefix, chain_.back());
  std::map<uint32_t, Prefix> pages;
  ASSERT_TRUE(ledger_
                  ->ForEachPageEntry([&](const si::PageEntry& e) {
                    EXPECT_EQ(e.owner, 1u);
                    EXPECT_EQ(e.id.page_tokens, kPageTokens);
                    pages[e.page] = e.id.chain_hash;
                    return true;
                  })
                  .ok());
  EXPECT_EQ(pages.size(), 4u);
  for (uint32_t p = 0; p < 4; ++p) EXPECT_EQ(pages[p], chain_[p]);
  auto referrers = ledger_->Referrers(kNs, 1);
  ASSERT_TRUE(referrers.ok());
  ASSERT_EQ(referrers->size(), 1u);
  EXPECT_EQ((*referrers)[0].prefix, chain_.back());
}

TEST_F(PageLedgerTest, ADamagedRunRecordIsFoundByTheScanAndStillReclaimed) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  ASSERT_TRUE(
      db_->Put(rocksdb::WriteOptions(), cf_[si::kRuns], si::PutKey(kNs, 1), "garbage").ok());
  bool damaged = false;
  ASSERT_TRUE(ledger_
                  ->ForEachRun([&](const si::RunEntry& e) {
                    damaged = !e.malformed && e.run.status().IsCorruption();
                    return true;
                  })
                  .ok());
  EXPECT_TRUE(damaged);
  EXPECT_TRUE(ledger_->LoadRun(kNs, 1).status().IsCorruption());
  // Its records are unreachable: the last release removes it all the same.
  EXPECT_EQ(Release(1, {1}), std::vector<PutId>{1});
  EXPECT_FALSE(*ledger_->HasRun(kNs, 1));
}

TEST_F(PageLedgerTest, PageEntriesOfPutsThatAreGoneOrUnreadableAreStale) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  ASSERT_TRUE(db_->Delete(rocksdb::WriteOptions(), cf_[si::kRuns], si::PutKey(kNs, 1)).ok());
  ASSERT_TRUE(db_->Put(rocksdb::WriteOptions(), cf_[si::kPages], "short", "x").ok());
  size_t malformed = 0;
  ASSERT_TRUE(ledger_
                  ->ForEachPageEntry([&](const si::PageEntry& e) {
                    malformed += e.malformed;
                    return true;
                  })
                  .ok());
  EXPECT_EQ(malformed, 1u);
  auto removed = ledger_->RemoveStalePageEntries();
  ASSERT_TRUE(removed.ok());
  EXPECT_EQ(*removed, 5u);
  EXPECT_EQ(PageEntries(), 0u);
}

TEST_F(PageLedgerTest, RestoreDerivedWritesTheMissingRunRecordRefsAndPageEntries) {
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  // The run record and refs are lost; the page entries survive.
  ASSERT_TRUE(db_->Delete(rocksdb::WriteOptions(), cf_[si::kRuns], si::PutKey(kNs, 1)).ok());
  ASSERT_TRUE(db_->Delete(rocksdb::WriteOptions(), cf_[si::kRefs], si::RefKey(kNs, 1, 1)).ok());
  Manifest m;
  m.put_id = 1;
  m.page_tokens = kPageTokens;
  m.chunk_bytes = 4096;
  LayerEntry l;
  l.layer = 0;
  l.kind = Kind::kQsa;
  l.rows = 4 * kPageTokens;
  l.row_bytes = {8};
  l.runs = {{1, 0, 4096, 0, 4}};
  m.layers.push_back(l);
  std::vector<si::SnapshotManifest> snaps{{{kNs, chain_.back()}, &m}};
  std::map<uint32_t, Prefix> chain_seen;
  bool changed = false;
  std::vector<std::string> not_repaired;
  ASSERT_TRUE(ledger_
                  ->RestoreDerived(
                      snaps,
                      [&](const si::SnapshotManifest&,
                          const std::map<uint32_t, Prefix>& chain) -> Result<RunRecord> {
                        chain_seen = chain;
                        return run;
                      },
                      &not_repaired, &changed)
                  .ok());
  EXPECT_TRUE(changed);
  EXPECT_TRUE(not_repaired.empty());
  EXPECT_EQ(chain_seen.size(), 4u) << "the rebuild is given the chain the page index names";
  auto back = ledger_->LoadRun(kNs, 1);
  ASSERT_TRUE(back.ok() && *back);
  EXPECT_EQ(**back, run);
  EXPECT_TRUE(*ledger_->HasRef(kNs, 1, 1));
  // Nothing missing now: a second pass changes nothing.
  changed = false;
  ASSERT_TRUE(ledger_
                  ->RestoreDerived(
                      snaps,
                      [&](const si::SnapshotManifest&, const std::map<uint32_t, Prefix>&)
                          -> Result<RunRecord> { return Status::Internal("not asked"); },
                      &not_repaired, &changed)
                  .ok());
  EXPECT_FALSE(changed);
}

TEST_F(PageLedgerTest, APutSharingBesideTheOwnersRemovalNeverLosesAPageItCommitted) {
  // Puts share the owner's pages while its own snapshot goes, at the same
  // time: whatever the interleaving, every put that committed a ref to the
  // owner finds it stored, and with no such put the owner is reclaimed.
  const auto run = RunOf(chain_, hashes_);
  Commit(chain_.back(), 1, &run);
  std::vector<PutId> sharers;
  std::thread remover([&] { EXPECT_TRUE(Release(1, {1}).size() <= 1); });
  for (PutId put = 2; put < 40; ++put) {
    auto shared = Share({hashes_});
    ASSERT_TRUE(shared.ok());
    if (shared->owners.count(1) == 0) continue;  // already reclaimed: nothing to share
    Commit(PrefixFromSeed(put), put, nullptr, {1});
    sharers.push_back(put);
  }
  remover.join();
  EXPECT_EQ(ledger_->pins(), 0u);
  if (!sharers.empty()) {
    EXPECT_TRUE(HasRun(1)) << sharers.size() << " puts read it";
    for (PutId put : sharers) Release(put, {1});
  }
  EXPECT_FALSE(HasRun(1)) << "the last ref gone, the owner goes";
  EXPECT_EQ(PageEntries(), 0u);
}

}  // namespace
}  // namespace auxstore
