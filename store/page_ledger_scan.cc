// RocksPageLedger: the scans verify, compact, repair and the snapshot index
// read, and the entries compact removes and repair restores.
#include <rocksdb/write_batch.h>

#include <algorithm>
#include <set>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "store/bytes.h"
#include "store/commit_batch.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/page_ledger_rocks.h"

namespace auxstore::store_internal {
namespace {

// A page entry's key and value decoded; false when either is malformed.
bool ParsePageEntry(std::string_view key, ByteSpan value, PageEntry* out) {
  if (key.size() != kPageKeyBytes ||
      !DecodePageRef(std::string(key), value, &out->owner, &out->page)) {
    return false;
  }
  const auto* k = reinterpret_cast<const uint8_t*>(key.data());
  out->id.ns = internal::GetBE64(k);
  out->id.page_tokens = internal::GetBE32(k + 8);
  std::copy(k + 12, k + 28, out->id.chain_hash.bytes.begin());
  return true;
}

// A snapshot stored records of its own (then it has a run record and a ref
// to its own put).
bool StoresRecords(const Manifest& m) {
  for (const LayerEntry& l : m.layers) {
    for (size_t a = 0; a < l.row_bytes.size(); ++a) {
      if (OwnStreamBytes(m, l, a) > 0) return true;
    }
  }
  return false;
}

}  // namespace

Status RocksPageLedger::ForEachRun(const Visit<RunEntry>& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRuns]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    RunEntry e;
    const std::string key = it->key().ToString();
    e.malformed = !ParsePutKey(key, &e.ns, &e.put);
    if (!e.malformed) e.run = DecodeRunRecordValue(key, Bytes(it->value()));
    if (!visit(e)) return Status::Ok();
  }
  return FromRocks(it->status(), "scan run records");
}

Status RocksPageLedger::ForEachRef(const Visit<RefEntry>& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRefs]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    RefEntry e;
    e.malformed = !ParseRefKey(it->key().ToStringView(), &e.ns, &e.owner, &e.referrer) ||
                  !ParseSnapshotKey(it->value().ToStringView(), &e.snapshot.ns, &e.snapshot.prefix);
    if (!visit(e)) return Status::Ok();
  }
  return FromRocks(it->status(), "scan refs");
}

Status RocksPageLedger::ForEachPageEntry(const Visit<PageEntry>& visit) {
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kPages]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    PageEntry e;
    e.malformed = !ParsePageEntry(it->key().ToStringView(), Bytes(it->value()), &e);
    if (!visit(e)) return Status::Ok();
  }
  return FromRocks(it->status(), "scan the page index");
}

Result<uint64_t> RocksPageLedger::RemoveStaleRefs(
    const SnapshotIsPut& live, std::vector<std::pair<NamespaceId, PutId>>* owners) {
  std::vector<std::string> stale;
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRefs]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      RefEntry e;
      if (!ParseRefKey(it->key().ToStringView(), &e.ns, &e.owner, &e.referrer) ||
          !ParseSnapshotKey(it->value().ToStringView(), &e.snapshot.ns, &e.snapshot.prefix)) {
        stale.push_back(it->key().ToString());
        continue;
      }
      AUXSTORE_ASSIGN_OR_RETURN(bool is_live, live(e.snapshot, e.referrer));
      if (is_live) continue;
      stale.push_back(it->key().ToString());
      owners->emplace_back(e.ns, e.owner);
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan refs"));
  }
  if (stale.empty()) return uint64_t{0};
  CommitBatch batch;
  for (const std::string& key : stale) (void)batch.rocks.Delete(cf_[kRefs], key);
  std::lock_guard lock(mu_);
  AUXSTORE_RETURN_IF_ERROR(host_.write(&batch, /*sync=*/false, "delete stale refs"));
  return uint64_t{stale.size()};
}

Result<uint64_t> RocksPageLedger::RemoveStalePageEntries() {
  CommitBatch batch;
  uint64_t removed = 0;
  std::lock_guard lock(mu_);
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kPages]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    PageEntry e;
    if (ParsePageEntry(it->key().ToStringView(), Bytes(it->value()), &e)) {
      std::string run;
      if (!db_->Get(rocksdb::ReadOptions(), cf_[kRuns], PutKey(e.id.ns, e.owner), &run)
               .IsNotFound()) {
        continue;
      }
    }
    (void)batch.rocks.Delete(cf_[kPages], it->key());
    ++removed;
  }
  AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan the page index"));
  if (removed == 0) return removed;
  AUXSTORE_RETURN_IF_ERROR(host_.write(&batch, /*sync=*/false, "delete stale page entries"));
  return removed;
}

// True when column family `cf` has no entry under `key` (for runs: none
// that decodes).
Result<bool> RocksPageLedger::Absent(int cf, const std::string& key) {
  std::string v;
  rocksdb::Status g = db_->Get(HotReadOptions(), cf_[cf], key, &v);
  if (g.IsNotFound()) return true;
  if (!g.ok()) return FromRocks(g, "look up " + cf_[cf]->GetName());
  return cf == kRuns && !DecodeRunRecordValue(key, Bytes(v)).ok();
}

Status RocksPageLedger::RestoreDerived(std::span<const SnapshotManifest> snapshots,
                                       const RebuildRun& rebuild,
                                       std::vector<std::string>* not_repaired, bool* changed) {
  // The chain hashes the page index names, per owner put.
  std::map<std::pair<NamespaceId, PutId>, std::map<uint32_t, Prefix>> chains;
  AUXSTORE_RETURN_IF_ERROR(ForEachPageEntry([&](const PageEntry& e) {
                             if (!e.malformed) chains[{e.id.ns, e.owner}][e.page] = e.id.chain_hash;
                             return true;
                           }).WithContext("rebuild"));
  std::lock_guard lock(mu_);
  CommitBatch batch;
  std::map<std::pair<NamespaceId, PutId>, RunRecord> runs;  // present or rebuilt
  for (const SnapshotManifest& s : snapshots) {
    const Manifest& m = *s.manifest;
    if (!StoresRecords(m)) continue;
    const std::string pkey = PutKey(s.id.ns, m.put_id);
    AUXSTORE_ASSIGN_OR_RETURN(bool missing, Absent(kRuns, pkey));
    if (!missing) continue;
    auto run = rebuild(s, chains[{s.id.ns, m.put_id}]);
    if (!run.ok()) {
      not_repaired->push_back("the run record of put " + PutHex(m.put_id) +
                              " cannot be rebuilt: " + run.error().ToString());
      continue;
    }
    (void)batch.rocks.Put(
        cf_[kRuns], pkey,
        EncodeEnvelope(Bytes(pkey), RecordKind::kRun, Bytes(EncodeRunRecord(*run))));
    runs[{s.id.ns, m.put_id}] = std::move(*run);
    *changed = true;
  }
  for (const SnapshotManifest& s : snapshots) {
    const Manifest& m = *s.manifest;
    for (PutId put : UsedPuts(m)) {
      if (put == m.put_id && !StoresRecords(m)) continue;
      const std::string rkey = RefKey(s.id.ns, put, m.put_id);
      AUXSTORE_ASSIGN_OR_RETURN(bool missing, Absent(kRefs, rkey));
      if (!missing) continue;
      (void)batch.rocks.Put(cf_[kRefs], rkey, SnapshotKey(s.id.ns, s.id.prefix));
      *changed = true;
    }
  }
  // Page entries of every put's chain (the first one found stays).
  std::set<std::string> added;
  for (const SnapshotManifest& s : snapshots) {
    const PutId put = s.manifest->put_id;
    std::optional<RunRecord> loaded;
    const RunRecord* run = nullptr;
    if (auto r = runs.find({s.id.ns, put}); r != runs.end()) {
      run = &r->second;
    } else {
      auto l = LoadRun(s.id.ns, put);
      if (!l.ok() || !*l) continue;
      loaded = std::move(**l);
      run = &*loaded;
    }
    for (size_t i = 0; i < run->chain.size(); ++i) {
      const std::string key = PageKey(s.id.ns, run->page_tokens, run->chain[i]);
      if (added.count(key)) continue;
      AUXSTORE_ASSIGN_OR_RETURN(bool missing, Absent(kPages, key));
      if (!missing) continue;
      added.insert(key);
      (void)batch.rocks.Put(cf_[kPages], key,
                            EncodePageRef(s.id.ns, run->page_tokens, run->chain[i], put,
                                          run->chain_first_page + static_cast<uint32_t>(i)));
      *changed = true;
    }
  }
  if (batch.rocks.Count() == 0) return Status::Ok();
  return host_.write(&batch, /*sync=*/true, "rebuild derived metadata");
}

bool RocksPageLedger::OwnsFamily(int cf) { return cf == kRuns || cf == kPages || cf == kRefs; }

bool RocksPageLedger::EntryHolds(int cf, std::string_view key, std::string_view value,
                                 const SnapshotReads& reads) {
  if (cf != kRefs) {
    return DecodeEnvelope(Bytes(key), Bytes(value)).ok();
  }
  NamespaceId ns = 0;
  PutId owner = 0, referrer = 0;
  SnapshotId s;
  if (!ParseRefKey(key, &ns, &owner, &referrer) || !ParseSnapshotKey(value, &s.ns, &s.prefix) ||
      s.ns != ns) {
    return false;
  }
  return reads(s, referrer, owner);
}

std::vector<std::string> RocksPageLedger::RunKeys(
    std::span<const std::pair<NamespaceId, PutId>> puts) {
  std::set<std::string> keys;
  for (const auto& [ns, put] : puts) keys.insert(PutKey(ns, put));
  return {keys.begin(), keys.end()};
}

}  // namespace auxstore::store_internal
