// Store::Compact (include/auxstore/maintenance.h): what `auxstore compact`
// runs. Drops unwanted snapshots through the same erase path as the engine's
// (manifest first, as a commit), removes orphan records, then rewrites every
// column family's bottom level so erased bytes leave the disk.
#include <rocksdb/convenience.h>

#include <algorithm>
#include <filesystem>

#include "store/db_store.h"
#include "store/keys.h"

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
  std::vector<std::pair<NamespaceId, Prefix>> groups;  // prefixes with records, no manifest
  std::vector<std::string> strays;                     // records a live manifest does not name
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRecords]));
    for (it->SeekToFirst(); it->Valid();) {
      ParsedRecordKey k;
      if (!ParseRecordKey(it->key().ToStringView(), &k)) {
        strays.push_back(it->key().ToString());
        it->Next();
        continue;
      }
      auto m = LoadManifest(k.ns, k.prefix);
      if (m.ok()) {
        // The walk verification does, collecting what the manifest does not name.
        std::unique_ptr<rocksdb::Iterator> walk(
            db_->NewIterator(HotReadOptions(), cf_[kRecords]));
        const std::string end = SnapshotRangeEnd(k.ns, k.prefix);
        for (walk->Seek(SnapshotKey(k.ns, k.prefix)); walk->Valid() && walk->key().compare(end) < 0;
             walk->Next()) {
          ParsedRecordKey r;
          ParseRecordKey(walk->key().ToStringView(), &r);
          const LayerEntry* e = m->FindLayer(r.layer);
          if (e == nullptr || r.chunk >= e->chunks) strays.push_back(walk->key().ToString());
        }
        AUXSTORE_RETURN_IF_ERROR(FromRocks(walk->status(), "scan the records of a snapshot"));
      } else if (m.error().IsNotFound()) {
        groups.emplace_back(k.ns, k.prefix);
      } else if (!m.error().IsCorruption()) {
        return m.error();
      }  // a damaged manifest was quarantined by the load: its records go next time
      it->Seek(SnapshotRangeEnd(k.ns, k.prefix));
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan records for orphans"));
  }
  for (const auto& [ns, prefix] : groups) {
    KeyLock key_lock(this, SnapshotKey(ns, prefix));
    std::string manifest;
    if (!db_->Get(rocksdb::ReadOptions(), cf_[kManifests], SnapshotKey(ns, prefix), &manifest)
             .IsNotFound()) {
      continue;  // put meanwhile
    }
    AUXSTORE_RETURN_IF_ERROR(DeleteRecords(ns, prefix));
    ++report->orphan_snapshots_removed;
  }
  for (const std::string& key : strays) {
    AUXSTORE_RETURN_IF_ERROR(
        Guard(db_->Delete(rocksdb::WriteOptions(), cf_[kRecords], key), "delete a stray record"));
    ++report->orphan_records_removed;
  }
  return SweepIntents();
}

Result<CompactReport> DbStore::Compact(const CompactOptions& o) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  WaitForIndex();  // the budgets and the totals come from the snapshot index
  CompactReport r;
  r.disk_bytes_before = DiskBytes();
  r.snapshots_before = index_.snapshots();
  r.payload_bytes_before = index_.bytes();

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
  r.payload_bytes_after = index_.bytes();
  r.disk_bytes_after = DiskBytes();
  return r;
}

}  // namespace auxstore::store_internal
