// Removing snapshots and reclaiming what no snapshot uses any more: erase,
// eviction, expiry and quarantine all go through RemoveSnapshot.
//
// In one synced batch: the manifest and its recency go, with what the page
// ledger releases (PageLedger::ReleaseSnapshot: the snapshot's refs, and the
// run record and page entries of every put nobody uses any more). Only after
// that commit are the garbage puts' records deleted, so no visible manifest
// can ever name a page whose records are gone; a crash in between leaves
// orphan records that `compact` removes.
#include <rocksdb/convenience.h>
#include <rocksdb/write_batch.h>

#include <set>

#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/run_record.h"
#include "store/bytes.h"
#include "store/commit_batch.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"

namespace auxstore::store_internal {

Status DbStore::Erase(NamespaceId ns, const Prefix& prefix) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  bool absent = false;
  Status s = EraseSnapshot(SnapshotKey(ns, prefix), EraseReason::kUser, &absent);
  return absent ? Status::Ok() : s;
}

Status DbStore::EraseSnapshot(const std::string& skey, EraseReason reason, bool* absent) {
  NamespaceId ns = 0;
  Prefix prefix;
  if (!ParseSnapshotKey(skey, &ns, &prefix)) return Status::Internal("bad snapshot key");
  KeyLock key_lock(this, skey);
  std::string existing;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &existing);
  if (g.IsNotFound()) {
    index_.Removed(skey);
    if (absent) *absent = true;
    return Status::NotFound("no snapshot for prefix " + prefix.ToHex() + " in namespace " +
                            NamespaceHex(ns));
  }
  if (!g.ok()) return FromRocks(g, "look up prefix " + prefix.ToHex());
  if (reason != EraseReason::kUser && index_.Leased(skey, NowUnixMs())) {
    return Status::Busy("snapshot of prefix " + prefix.ToHex() + " is leased");
  }
  AUXSTORE_RETURN_IF_ERROR(
      RemoveSnapshot(ns, prefix, existing, nullptr, "erase the manifest of " + prefix.ToHex()));
  if (reason == EraseReason::kEviction) ++evictions_;
  if (reason == EraseReason::kExpiry) ++expirations_;
  return Status::Ok();
}

// Caller holds the key lock. `manifest_value` is the stored value (it may
// not decode: a damaged manifest is removed all the same, its refs left to
// `compact`, which drops refs of referrers that are gone).
Status DbStore::RemoveSnapshot(NamespaceId ns, const Prefix& prefix,
                               const std::string& manifest_value, const Status* quarantine,
                               const std::string& what) {
  const std::string skey = SnapshotKey(ns, prefix);
  auto m = DecodeManifestRecord(skey, Bytes(manifest_value));
  std::vector<PutId> used;
  PutId self = 0;
  if (m.ok()) {
    self = m->put_id;
    used = UsedPuts(*m);  // with its own run record, if it stored any
  }
  CommitBatch batch;
  (void)batch.rocks.Delete(cf_[kManifests], skey);
  (void)batch.rocks.Delete(cf_[kRecency], skey);
  AUXSTORE_ASSIGN_OR_RETURN(
      std::vector<PutId> garbage,
      ledger_.ReleaseSnapshot(ns, self, used, &batch, [&](CommitBatch* b) -> Status {
        if (quarantine == nullptr) return Commit(&b->rocks, /*sync=*/true, what);
        std::lock_guard commit_lock(commit_mu_);
        (void)b->rocks.Put(cf_[kMeta], kQuarantinesKey,
                           EncodeMetaU64(kQuarantinesKey, quarantines_ + 1));
        AUXSTORE_RETURN_IF_ERROR(CommitLocked(&b->rocks, /*sync=*/true, what));
        ++quarantines_;
        return Status::Ok();
      }));
  index_.Removed(skey);
  for (PutId o : garbage) AUXSTORE_RETURN_IF_ERROR(DeleteRecordsOfPut(ns, o));
  return Status::Ok();
}

LedgerHost DbStore::MakeLedgerHost() {
  LedgerHost host;
  host.commit = [this](CommitBatch* batch, const std::string& what) {
    return Commit(&batch->rocks, /*sync=*/true, what);
  };
  host.write = [this](CommitBatch* batch, bool sync, const std::string& what) {
    rocksdb::WriteOptions wo;
    wo.sync = sync;
    return Guard(db_->Write(wo, &batch->rocks), what);
  };
  host.drop_records = [this](NamespaceId ns, PutId put) { return DeleteRecordsOfPut(ns, put); };
  host.writable = [this] { return !fenced_ && !options_.read_only; };
  return host;
}

Status DbStore::DeleteRecordsOfPut(NamespaceId ns, PutId put) {
  const std::string begin = PutKey(ns, put), end = PutRangeEnd(ns, put);
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->DeleteRange(rocksdb::WriteOptions(), cf_[kRecords], begin, end),
            "delete the records of a put"));
  // An ingested put is a file of its own: drop it now, no compaction I/O.
  rocksdb::Slice b(begin), e(end);
  return FromRocks(rocksdb::DeleteFilesInRange(db_.get(), cf_[kRecords], &b, &e),
                   "reclaim the files of a put");
}

Status DbStore::Quarantine(NamespaceId ns, const Prefix& prefix, const Status& why) {
  Status s = QuarantineIf(ns, prefix, nullptr, why);
  return s.IsNotFound() ? Status::Ok() : s;
}

Status DbStore::QuarantineIfUnchanged(NamespaceId ns, const Prefix& prefix, const Manifest& seen,
                                      const Status& why) {
  return QuarantineIf(ns, prefix, SameManifest(SnapshotKey(ns, prefix), seen), why);
}

Status DbStore::QuarantineIf(NamespaceId ns, const Prefix& prefix, const ManifestCheck& still_same,
                             const Status& why) {
  if (options_.read_only || fenced_) return why;  // nothing we may change
  const std::string skey = SnapshotKey(ns, prefix);
  KeyLock key_lock(this, skey);
  std::string existing;
  if (!db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &existing).ok() ||
      (still_same && !still_same(existing))) {
    // Erased or replaced since the reader saw it: what it saw was a race
    // with a writer, not damage, and the current snapshot is not touched.
    return Status::NotFound("snapshot of prefix " + prefix.ToHex() +
                            " was erased or replaced while it was being read");
  }
  AUXSTORE_RETURN_IF_ERROR(RemoveSnapshot(
      ns, prefix, existing, &why, "quarantine " + prefix.ToHex() + " (" + why.message() + ")"));
  Log(LogLevel::kWarn,
      "quarantined the snapshot of prefix " + prefix.ToHex() + ": " + why.message());
  return why;
}

// A record of put `owner`'s stream (layer, array) failed its checks: every
// snapshot that uses a page or tail byte in that record's range goes, and
// no other (issue 14: a bad page quarantines its users and nothing else).
Status DbStore::QuarantineRecord(NamespaceId ns, PutId owner, uint32_t layer, uint8_t array,
                                 uint32_t chunk, const Status& why) {
  if (options_.read_only || fenced_) return why;
  auto rec = ledger_.LoadRun(ns, owner);
  if (!rec.ok() || !*rec) return why;
  const RunLayer* rl = (*rec)->FindLayer(layer);
  if (rl == nullptr || array >= rl->arrays.size()) return why;
  const uint64_t page_bytes = uint64_t{(*rec)->page_tokens} * rl->arrays[array].row_bytes;
  const uint64_t lo = uint64_t{chunk} * (*rec)->chunk_bytes;
  const uint64_t hi = lo + (*rec)->chunk_bytes;  // past the end is fine
  const uint64_t pages_end = uint64_t{rl->pages} * page_bytes;
  // Pages [bad_first, bad_end) of the chain, and whether the tail is hit.
  const uint32_t bad_first = page_bytes ? rl->first_page + static_cast<uint32_t>(lo / page_bytes)
                                        : rl->first_page + rl->pages;
  const uint32_t bad_end =
      page_bytes
          ? rl->first_page + static_cast<uint32_t>(std::min(hi, pages_end) / page_bytes +
                                                   (std::min(hi, pages_end) % page_bytes != 0))
          : bad_first;
  const bool tail_hit = hi > pages_end;
  // Every snapshot that holds a ref to `owner`.
  auto referrers = ledger_.Referrers(ns, owner);
  if (!referrers.ok()) return why;
  for (const SnapshotId& s : *referrers) {
    auto m = LoadManifest(s.ns, s.prefix);
    if (!m.ok()) continue;
    const LayerEntry* e = m->FindLayer(layer);
    bool uses = false;
    if (e != nullptr) {
      if (m->put_id == owner && tail_hit) uses = true;
      for (const PageRun& r : e->runs) {
        if (r.owner == owner && r.first_page < bad_end && bad_first < r.first_page + r.pages) {
          uses = true;
        }
      }
    }
    if (uses) (void)QuarantineIf(s.ns, s.prefix, nullptr, why);
  }
  return why;
}

}  // namespace auxstore::store_internal
