// RocksPageLedger: the page ledger in the store's RocksDB (docs/format.md,
// "Store keys"):
//   runs   ns | put                             -> envelope(kRun): the run record
//   pages  ns | page_tokens | chain hash(16)    -> envelope(kPageRef): owner put, page
//   refs   ns | owner put | referrer put        -> the referrer's snapshot key
// Its entries join the store's commit batch (CommitBatch), so a manifest and
// the ledger entries it needs are one atomic write. page_ledger_rocks.cc:
// the put path, release, pins and reclaim; page_ledger_scan.cc: the scans,
// compact's and repair's work.
#pragma once

#include <rocksdb/db.h>

#include <memory>
#include <mutex>
#include <set>
#include <utility>

#include "store/page_ledger.h"

namespace auxstore::store_internal {

// A page index value: the put that stored the page and the page's number.
std::string EncodePageRef(NamespaceId ns, uint32_t page_tokens, const Prefix& chain_hash,
                          PutId owner, uint32_t page);
bool DecodePageRef(const std::string& key, ByteSpan value, PutId* owner, uint32_t* page);
// A run record's value decoded under its key.
Result<RunRecord> DecodeRunRecordValue(const std::string& key, ByteSpan value);

class RocksPageLedger final : public PageLedger {
 public:
  // `db` and `families` are the store's own handles, read at each call (the
  // store opens and closes them; the ledger is used only while they are open).
  RocksPageLedger(const std::unique_ptr<rocksdb::DB>& db,
                  const std::vector<rocksdb::ColumnFamilyHandle*>& families, LedgerHost host)
      : db_(db), cf_(families), host_(std::move(host)) {}

  Result<SharedChain> ShareChain(NamespaceId ns, uint32_t page_tokens,
                                 std::span<const Prefix> page_ends,
                                 std::span<const LayerPages> layers,
                                 ShareFrom from = ShareFrom::Index()) override;
  Status CommitPut(const PutEntries& put, CommitBatch* batch, const CommitFn& commit) override;
  Result<size_t> LeadingStoredPages(NamespaceId ns, uint32_t page_tokens,
                                    std::span<const Prefix> page_ends) override;
  Result<bool> HasRun(NamespaceId ns, PutId put) override;
  Result<std::vector<PutId>> ReleaseSnapshot(NamespaceId ns, PutId self,
                                             std::span<const PutId> used, CommitBatch* batch,
                                             const CommitFn& commit) override;
  Result<std::vector<PutId>> CommitRewrite(const PutEntries& put, PutId old_self,
                                           std::span<const PutId> old_used, CommitBatch* batch,
                                           const CommitFn& commit) override;
  void Unpin(NamespaceId ns, PutId put) override;
  Result<bool> ReclaimIfUnused(NamespaceId ns, PutId put) override;
  Result<std::optional<RunRecord>> LoadRun(NamespaceId ns, PutId put) override;
  Result<bool> HasRef(NamespaceId ns, PutId owner, PutId referrer) override;
  Result<std::vector<SnapshotId>> Referrers(NamespaceId ns, PutId owner) override;
  Status ForEachRun(const Visit<RunEntry>& visit) override;
  Status ForEachRef(const Visit<RefEntry>& visit) override;
  Status ForEachPageEntry(const Visit<PageEntry>& visit) override;
  Result<uint64_t> RemoveStaleRefs(const SnapshotIsPut& live,
                                   std::vector<std::pair<NamespaceId, PutId>>* owners) override;
  Result<uint64_t> RemoveStalePageEntries() override;
  Status RestoreDerived(std::span<const SnapshotManifest> snapshots, const RebuildRun& rebuild,
                        std::vector<std::string>* not_repaired, bool* changed) override;

  // ---- for repair's rewrite of a damaged column family (RocksDB's own
  // work, db_store_rebuild.cc): which families are the ledger's, whether an
  // entry read back from one is still true, and the keys a walk stopped by
  // a damaged block can resume at.
  static bool OwnsFamily(int cf);
  // Whether an entry read back from ledger family `cf` is what its writer
  // wrote (runs and pages: their envelopes; refs: the shape of key and
  // value) and still true: a ref holds only while its snapshot, as put
  // `referrer`, reads put `owner` (`reads`).
  using SnapshotReads = std::function<bool(const SnapshotId& s, PutId referrer, PutId owner)>;
  static bool EntryHolds(int cf, std::string_view key, std::string_view value,
                         const SnapshotReads& reads);
  // The run record keys of `puts`, ascending.
  static std::vector<std::string> RunKeys(std::span<const std::pair<NamespaceId, PutId>> puts);
  // Pins held now (tests).
  size_t pins() {
    std::lock_guard lock(mu_);
    return pins_.size();
  }

 private:
  Result<bool> HasRefsOtherThanLocked(NamespaceId ns, PutId owner, PutId referrer);
  // Adds the removal of `owner`'s run record and page entries to `batch`;
  // false when it has no run record.
  Result<bool> AddReclaimLocked(NamespaceId ns, PutId owner, CommitBatch* batch);
  // CommitPut's entries; a page entry naming a put in `reclaimed` is taken over.
  void AddPutEntriesLocked(const PutEntries& put, const std::set<PutId>& reclaimed,
                           CommitBatch* batch);
  bool PageEntryFreeLocked(const std::string& pkey, const std::set<PutId>& reclaimed);
  Result<bool> Absent(int cf, const std::string& key);

  const std::unique_ptr<rocksdb::DB>& db_;
  const std::vector<rocksdb::ColumnFamilyHandle*>& cf_;
  const LedgerHost host_;
  // Sharing: page lookups and commits that add refs, against removals that
  // drop them.
  std::mutex mu_;
  std::map<std::pair<NamespaceId, PutId>, int> pins_;  // puts a put in flight shares
};

}  // namespace auxstore::store_internal
