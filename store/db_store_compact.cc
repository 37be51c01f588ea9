// Store::Compact (include/auxstore/maintenance.h): what `auxstore compact`
// runs. Drops unwanted snapshots through the same erase path as the engine's
// (one commit, then the unused puts' records), removes what a crash left
// unreferenced (records without a run record, run records nobody refs,
// stale refs and page entries), then rewrites every column family's bottom
// level so erased bytes leave the disk. A store with a damaged SST is
// refused before anything changes: `verify --repair` rewrites around it.
#include <rocksdb/convenience.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "format/byte_order.h"
#include "format/manifest.h"
#include "format/run_record.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"

namespace auxstore::store_internal {
namespace {

bool Dropped(NamespaceId ns, const CompactOptions& o) {
  if (std::find(o.drop_ns.begin(), o.drop_ns.end(), ns) != o.drop_ns.end()) return true;
  return !o.keep_ns.empty() && std::find(o.keep_ns.begin(), o.keep_ns.end(), ns) == o.keep_ns.end();
}

}  // namespace

uint64_t DbStore::DiskBytes() {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fe;
    if (it->is_regular_file(fe)) total += it->file_size(fe);
  }
  return total;
}

Status DbStore::RemoveOrphans(CompactReport* report) {
  AUXSTORE_RETURN_IF_ERROR(RemoveOrphanRecords(report));
  // Refs of snapshots that are gone (a damaged manifest removed as it was),
  // then every put nobody refs any more, then page entries of puts that are
  // gone (lookups would miss a share).
  std::vector<std::pair<NamespaceId, PutId>> unreferenced;
  AUXSTORE_ASSIGN_OR_RETURN(uint64_t stale_refs,
                            ledger_.RemoveStaleRefs(
                                [&](const SnapshotId& s, PutId referrer) -> Result<bool> {
                                  auto m = LoadManifest(s.ns, s.prefix);
                                  if (m.ok()) return m->put_id == referrer;
                                  if (!m.error().IsNotFound() && !m.error().IsCorruption())
                                    return m.error();
                                  return false;
                                },
                                &unreferenced));
  report->stale_entries_removed += stale_refs;
  AUXSTORE_RETURN_IF_ERROR(ledger_.ForEachRun([&](const RunEntry& e) {
    if (!e.malformed) unreferenced.emplace_back(e.ns, e.put);
    return true;
  }));
  std::sort(unreferenced.begin(), unreferenced.end());
  unreferenced.erase(std::unique(unreferenced.begin(), unreferenced.end()), unreferenced.end());
  for (const auto& [ns, put] : unreferenced) {
    AUXSTORE_ASSIGN_OR_RETURN(bool reclaimed, ledger_.ReclaimIfUnused(ns, put));
    if (reclaimed) ++report->orphan_puts_removed;
  }
  AUXSTORE_ASSIGN_OR_RETURN(uint64_t stale_pages, ledger_.RemoveStalePageEntries());
  report->stale_entries_removed += stale_pages;
  return SweepIntents();
}

// Records of puts with no run record (crashed before their commit, or
// between a reclaim's commit and its delete), and records inside a live
// put's range its run record does not name.
Status DbStore::RemoveOrphanRecords(CompactReport* report) {
  std::vector<std::pair<NamespaceId, PutId>> orphans;
  std::vector<std::string> strays;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRecords]));
    for (it->SeekToFirst(); it->Valid();) {
      ParsedRecordKey k;
      if (!ParseRecordKey(it->key().ToStringView(), &k)) {
        strays.push_back(it->key().ToString());
        it->Next();
        continue;
      }
      auto rec = ledger_.LoadRun(k.ns, k.put);
      if (rec.ok() && *rec) {
        AUXSTORE_RETURN_IF_ERROR(FindStrayRecords(k.ns, k.put, **rec, &strays));
      } else if (rec.ok()) {
        orphans.emplace_back(k.ns, k.put);
      }  // a damaged run record: its users are corrupt (verify --repair), not orphans
      it->Seek(PutRangeEnd(k.ns, k.put));
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan records for orphans"));
  }
  for (const auto& [ns, put] : orphans) {
    // An ingested put in flight has its records before its run record, under
    // an intent: the intent is read first (the commit clears it and writes
    // the run record at once), and such puts are SweepIntents' to judge.
    const std::string pkey = PutKey(ns, put);
    std::string v;
    rocksdb::Status intent = db_->Get(rocksdb::ReadOptions(), cf_[kMeta], kIntentPrefix + pkey, &v);
    if (!intent.IsNotFound()) continue;
    auto has_run = ledger_.HasRun(ns, put);
    if (!has_run.ok() || *has_run) continue;
    AUXSTORE_RETURN_IF_ERROR(DeleteRecordsOfPut(ns, put));
    ++report->orphan_puts_removed;
  }
  for (const std::string& key : strays) {
    AUXSTORE_RETURN_IF_ERROR(
        Guard(db_->Delete(rocksdb::WriteOptions(), cf_[kRecords], key), "delete a stray record"));
    ++report->orphan_records_removed;
  }
  return Status::Ok();
}

// The records in put `put`'s range that its run record does not name.
Status DbStore::FindStrayRecords(NamespaceId ns, PutId put, const RunRecord& rec,
                                 std::vector<std::string>* strays) {
  std::unique_ptr<rocksdb::Iterator> walk(db_->NewIterator(HotReadOptions(), cf_[kRecords]));
  const std::string end = PutRangeEnd(ns, put);
  for (walk->Seek(PutKey(ns, put)); walk->Valid() && walk->key().compare(end) < 0; walk->Next()) {
    ParsedRecordKey r;
    ParseRecordKey(walk->key().ToStringView(), &r);
    const RunLayer* rl = rec.FindLayer(r.layer);
    bool named = rl != nullptr && r.array < rl->arrays.size();
    if (named) {
      const RunArray& ra = rl->arrays[r.array];
      const uint64_t stream = uint64_t{rl->pages} * rec.page_tokens * ra.row_bytes + ra.tail_bytes;
      named = r.chunk < ChunkCount(stream, rec.chunk_bytes);
    }
    if (!named) strays->push_back(walk->key().ToString());
  }
  return FromRocks(walk->status(), "scan the records of a put");
}

Result<CompactReport> DbStore::Compact(const CompactOptions& o) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  // A compaction would stop at a damaged block (and RocksDB would stop all
  // writes): refuse before changing anything, and say what fixes it.
  AUXSTORE_ASSIGN_OR_RETURN(auto damaged, DamagedFiles());
  if (!damaged.empty()) {
    std::string files;
    for (const auto& [cf, names] : damaged) {
      for (const std::string& f : names) {
        files += (files.empty() ? "" : ", ") + f.substr(f.find_first_not_of('/')) + " (" +
                 setup_.cfs[cf].name + ")";
      }
    }
    return Status::Corruption("compact changed nothing: " + files +
                              " failed block checksums; run `auxstore verify --repair` first "
                              "(it rewrites the damaged column family around the damage)");
  }
  WaitForIndex();  // the budgets and the totals come from the snapshot index
  CompactReport r;
  r.disk_bytes_before = DiskBytes();
  r.snapshots_before = index_.snapshots();
  r.payload_bytes_before = index_.unique_bytes();

  std::vector<std::string> victims;
  AUXSTORE_RETURN_IF_ERROR(List(std::nullopt, [&](const SnapshotInfo& s) {
    if (Dropped(s.ns, o)) victims.push_back(SnapshotKey(s.ns, s.prefix));
    return true;
  }));
  for (const std::string& key : victims) {
    Status e = EraseSnapshot(key, EraseReason::kUser);
    if (!e.ok() && !e.IsNotFound()) return e;
    if (e.ok()) ++r.dropped_by_namespace;
  }
  const uint64_t expired = expirations_, evicted = evictions_;
  AUXSTORE_RETURN_IF_ERROR(MaintenancePass(o.ttl_seconds, o.max_bytes));
  r.expired = expirations_ - expired;
  r.evicted = evictions_ - evicted;
  AUXSTORE_RETURN_IF_ERROR(RemoveOrphans(&r));
  if (o.relayout) AUXSTORE_RETURN_IF_ERROR(RelayoutChains(&r));

  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  co.exclusive_manual_compaction = true;
  for (auto* cf : cf_) {
    AUXSTORE_RETURN_IF_ERROR(
        Guard(db_->CompactRange(co, cf, nullptr, nullptr), "compact " + cf->GetName()));
  }
  // Old WAL files hold erased small snapshots too: sync and let them go.
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->FlushWAL(true), "sync the WAL"));
  AUXSTORE_RETURN_IF_ERROR(Flush());
  r.snapshots_after = index_.snapshots();
  r.payload_bytes_after = index_.unique_bytes();
  r.disk_bytes_after = DiskBytes();
  return r;
}

}  // namespace auxstore::store_internal
