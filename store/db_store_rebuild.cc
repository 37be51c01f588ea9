// What `verify --repair` does beyond removing corrupt snapshots: a column
// family with a damaged SST file is rewritten around the damage, and the
// derived metadata (run records, refs, page entries) is rebuilt from the
// manifests and the records it describes. Derived metadata is rebuilt, not
// mourned: its damage never costs an intact snapshot, and no damaged block
// is left for `compact` to trip over.
//
// Rewriting one column family: every entry still readable in it (blocks
// that pass their checksums; each value also checked by its own envelope,
// which is seeded by its key) is written again, the memtable is flushed, and then
// every file the family had before is dropped (DB::DeleteFile, bottom level
// first, level 0 oldest first: nothing older is left for a dropped
// tombstone to uncover). A crash in between leaves both copies, equal; the
// next repair finds the damaged file again and finishes.
#include <rocksdb/convenience.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/run_record.h"
#include "format/xxh3.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/family_rewrite.h"
#include "store/keys.h"
#include "store/page_ledger_rocks.h"
#include "store/record_check.h"

namespace auxstore::store_internal {
namespace {

// An entry of column family `cf` (not the ledger's) that is what its writer
// wrote: checked by its envelope (seeded by its key), or for recency, which
// has none, by the shape of key and value.
bool EntryIntact(int cf, const rocksdb::Slice& key, const rocksdb::Slice& value) {
  switch (cf) {
    case kDefault:
      return true;
    case kRecency: {
      NamespaceId ns = 0;
      Prefix prefix;
      return ParseSnapshotKey(key.ToStringView(), &ns, &prefix) && value.size() == 8;
    }
    default:
      return DecodeEnvelope(Bytes(key), Bytes(value)).ok();
  }
}

struct Xxh3Free {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

}  // namespace

Result<std::map<int, std::set<std::string>>> DbStore::DamagedFiles() {
  std::map<int, std::set<std::string>> out;
  std::vector<rocksdb::LiveFileMetaData> live;
  db_->GetLiveFilesMetaData(&live);
  rocksdb::ReadOptions ro;
  ro.verify_checksums = true;
  ro.fill_cache = false;
  for (const auto& f : live) {
    int cf = -1;
    for (int i = 0; i < kCfCount; ++i) {
      if (setup_.cfs[i].name == f.column_family_name) cf = i;
    }
    if (cf < 0) continue;
    rocksdb::Options opts(setup_.db, setup_.cfs[cf].options);
    rocksdb::Status s =
        rocksdb::VerifySstFileChecksum(opts, rocksdb::EnvOptions(), ro, f.db_path + f.name);
    if (s.IsCorruption()) out[cf].insert(f.name);
  }
  return out;
}

// An entry read back from column family `cf` that a rewrite keeps: intact,
// and for the page ledger's families still true (a ref has no envelope: it
// is kept only when the snapshot it names still has the referrer's put and
// reads the owner's records; RebuildDerived writes every ref a manifest
// needs).
bool DbStore::KeepEntry(int cf, const rocksdb::Slice& key, const rocksdb::Slice& value) {
  if (!RocksPageLedger::OwnsFamily(cf)) return EntryIntact(cf, key, value);
  return RocksPageLedger::EntryHolds(
      cf, key.ToStringView(), value.ToStringView(),
      [&](const SnapshotId& s, PutId referrer, PutId owner) {
        const std::string skey = SnapshotKey(s.ns, s.prefix);
        std::string v;
        if (!db_->Get(HotReadOptions(), cf_[kManifests], skey, &v).ok()) return false;
        auto m = DecodeManifestRecord(skey, Bytes(v));
        if (!m.ok() || m->put_id != referrer) return false;
        const auto used = UsedPuts(*m);
        return std::find(used.begin(), used.end(), owner) != used.end();
      });
}

// The snapshots the other families name (their refs and recency entries):
// those whose manifest a rewrite of the manifests lost are reported removed.
std::set<std::string> DbStore::SnapshotsNamedElsewhere() {
  std::set<std::string> out;
  (void)ledger_.ForEachRef([&](const RefEntry& e) {
    if (!e.malformed) out.insert(SnapshotKey(e.snapshot.ns, e.snapshot.prefix));
    return true;
  });
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRecency]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) out.insert(it->key().ToString());
  return out;
}

// The family's table files are read one by one (family_rewrite.h), never
// through RocksDB's merged iterator, whose Seek fails on a damaged level-0
// file even for keys only an intact file holds.
Status DbStore::RewriteFamily(int cf, const std::set<std::string>& damaged, RepairReport* out) {
  rocksdb::ColumnFamilyHandle* h = cf_[cf];
  const std::string name = setup_.cfs[cf].name;
  // No compaction may read the damaged file meanwhile.
  const bool auto_off = db_->GetOptions(h).disable_auto_compactions;
  AUXSTORE_RETURN_IF_ERROR(FromRocks(db_->SetOptions(h, {{"disable_auto_compactions", "true"}}),
                                     "hold compactions of " + name));
  auto restore_compactions = [&](Status s) {
    if (!s.ok()) {
      (void)db_->SetOptions(h, {{"disable_auto_compactions", auto_off ? "true" : "false"}});
    }
    return s;
  };
  rocksdb::FlushOptions fo;
  fo.wait = true;
  // The memtable is newer than every table: flushed, it is one more table.
  AUXSTORE_RETURN_IF_ERROR(
      restore_compactions(Guard(db_->Flush(fo, h), "flush " + name + " before its rewrite")));
  std::vector<rocksdb::LiveFileMetaData> before;
  std::vector<RewriteTable> tables;
  {
    std::vector<rocksdb::LiveFileMetaData> live;
    db_->GetLiveFilesMetaData(&live);
    for (auto& f : live) {
      if (f.column_family_name != name) continue;
      tables.push_back({f, f.db_path + f.name, damaged.count(f.name) > 0});
      before.push_back(std::move(f));
    }
  }
  std::set<std::string> kept_manifests;
  RewriteHooks hooks;
  // Every value is checked by its envelope (or its shape); the ledger's
  // entries also by what they claim (KeepEntry).
  hooks.keep = [&](std::string_view key, std::string_view value) {
    return KeepEntry(cf, rocksdb::Slice(key.data(), key.size()),
                     rocksdb::Slice(value.data(), value.size()));
  };
  // Not records: a snapshot with records in a damaged block is removed and
  // reported, as repair always did (a read of it failed).
  hooks.salvage_damaged_blocks = cf != kRecords;
  hooks.on_table = [&](const RewriteTable& t, const TableWalk& walk) -> Status {
    if (t.damaged || walk.Complete()) return Status::Ok();
    return Status::Corruption("the table file " + t.meta.name + " of " + name +
                              " could not be read whole (" + walk.Describe() +
                              "); it was not known damaged: run the repair again");
  };
  if (cf == kManifests) {
    hooks.on_written = [&](std::string_view key) { kept_manifests.emplace(key); };
  }
  RewriteCounts counts;
  AUXSTORE_RETURN_IF_ERROR(
      restore_compactions(WriteNewestVersions(db_.get(), h, name, tables, hooks, &counts)));
  // Snapshots whose manifest sat in a damaged block (named by their refs).
  if (cf == kManifests && counts.damaged_blocks > 0) {
    for (const std::string& key : SnapshotsNamedElsewhere()) {
      CorruptSnapshot c;
      if (kept_manifests.count(key) || !ParseSnapshotKey(key, &c.ns, &c.prefix)) continue;
      c.why = "Corruption: its manifest record is in a damaged block";
      out->removed.push_back(std::move(c));
    }
  }
  AUXSTORE_RETURN_IF_ERROR(
      restore_compactions(Guard(db_->FlushWAL(true), "sync the rewrite of " + name)));
  AUXSTORE_RETURN_IF_ERROR(
      restore_compactions(Guard(db_->Flush(fo, h), "flush the rewrite of " + name)));
  AUXSTORE_RETURN_IF_ERROR(DropFamilyFiles(cf, std::move(before), damaged, auto_off));
  Log(LogLevel::kWarn,
      "repair rewrote " + name + " around its damaged files: " + std::to_string(counts.written) +
          " entries kept, " + std::to_string(counts.salvaged) + " of them salvaged from " +
          std::to_string(counts.damaged_blocks) + " damaged blocks, " +
          std::to_string(counts.not_kept) + " entries not intact dropped");
  return Status::Ok();
}

// Drops every file column family `cf` had before its rewrite: bottom level
// first, level 0 oldest first (nothing older is left for a dropped tombstone
// to uncover); then its compactions run as before (`auto_off`).
Status DbStore::DropFamilyFiles(int cf, std::vector<rocksdb::LiveFileMetaData> before,
                                const std::set<std::string>& damaged, bool auto_off) {
  rocksdb::ColumnFamilyHandle* h = cf_[cf];
  const std::string name = setup_.cfs[cf].name;
  // Every file from before goes: bottom level first, level 0 oldest first.
  std::sort(before.begin(), before.end(), [](const auto& a, const auto& b) {
    if (a.level != b.level) return a.level > b.level;
    return a.largest_seqno < b.largest_seqno;
  });
  db_->PauseBackgroundWork();
  Status dropped_files;
  for (const auto& f : before) {
    rocksdb::Status d = db_->DeleteFile(f.name);
    if (!d.ok() && dropped_files.ok()) dropped_files = FromRocks(d, "drop " + f.name);
  }
  db_->ContinueBackgroundWork();
  (void)db_->SetOptions(h, {{"disable_auto_compactions", auto_off ? "true" : "false"}});
  AUXSTORE_RETURN_IF_ERROR(dropped_files);
  std::vector<rocksdb::LiveFileMetaData> after;
  db_->GetLiveFilesMetaData(&after);
  for (const auto& f : after) {
    if (f.column_family_name == name && damaged.count(f.name)) {
      return Status::Corruption("the damaged file " + f.name + " of " + name +
                                " is still live after its column family was rewritten");
    }
  }
  return Status::Ok();
}

// The run record put m.put_id wrote, from its snapshot's manifest and its
// records (hashes taken from the bytes), and the chain hashes the page
// index still names (none when any is missing: shares of its pages are then
// missed, nothing is lost).
Result<RunRecord> DbStore::RebuildRunRecord(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                                            const std::map<uint32_t, Prefix>& chain_of_page) {
  RunRecord run;
  run.prefix = prefix;
  run.page_tokens = m.page_tokens;
  run.chunk_bytes = m.chunk_bytes;
  uint32_t chain_lo = UINT32_MAX, chain_hi = 0;
  for (const LayerEntry& l : m.layers) {
    const uint32_t own_first = OwnFirstPage(m, l);
    RunLayer rl{l.layer, l.kind, own_first, l.full_pages() - own_first, {}};
    bool stores = false;
    for (size_t a = 0; a < l.row_bytes.size(); ++a) {
      const uint64_t page_bytes = uint64_t{m.page_tokens} * l.row_bytes[a];
      const uint64_t stream = OwnStreamBytes(m, l, a);
      RunArray ra;
      ra.row_bytes = l.row_bytes[a];
      ra.tail_bytes = TailBytes(m, l, a);
      stores |= stream > 0;
      std::unique_ptr<XXH3_state_t, Xxh3Free> st(XXH3_createState());
      XXH3_64bits_reset(st.get());
      uint64_t at = 0;  // stream bytes hashed
      const uint32_t chunks = ChunkCount(stream, m.chunk_bytes);
      for (uint32_t c = 0; c < chunks; ++c) {
        const std::string key = RecordKey(ns, m.put_id, l.layer, static_cast<uint8_t>(a), c);
        std::string value;
        AUXSTORE_RETURN_IF_ERROR(FromRocks(db_->Get(HotReadOptions(), cf_[kRecords], key, &value),
                                           "read a record to rehash"));
        // The one record check (record_check.h): envelope, kind, size.
        const ChunkWant want{l.kind, 0, ChunkSize(stream, m.chunk_bytes, c), /*whole=*/true};
        auto checked = CheckChunkRecord(Bytes(key), Bytes(value), want);
        if (!checked.ok()) {
          return checked.error().WithContext("a record of put " + PutHex(m.put_id));
        }
        ByteSpan bytes = *checked;
        while (!bytes.empty()) {
          const bool in_pages = at < uint64_t{rl.pages} * page_bytes;
          const uint64_t part_end = in_pages ? (at / page_bytes + 1) * page_bytes : stream;
          const uint64_t take = std::min<uint64_t>(bytes.size(), part_end - at);
          XXH3_64bits_update(st.get(), bytes.data(), take);
          at += take;
          bytes = bytes.subspan(take);
          if (in_pages && at == part_end) {
            ra.page_xxh3.push_back(XXH3_64bits_digest(st.get()));
            XXH3_64bits_reset(st.get());
          }
        }
      }
      ra.tail_xxh3 = XXH3_64bits_digest(st.get());  // of the tail (reset after the pages)
      rl.arrays.push_back(std::move(ra));
    }
    if (rl.pages > 0) {
      chain_lo = std::min(chain_lo, rl.first_page);
      chain_hi = std::max(chain_hi, rl.first_page + rl.pages);
    }
    if (stores || rl.pages > 0) run.layers.push_back(std::move(rl));
  }
  if (chain_lo < chain_hi) {
    std::vector<Prefix> chain;
    for (uint32_t pg = chain_lo; pg < chain_hi; ++pg) {
      auto c = chain_of_page.find(pg);
      if (c == chain_of_page.end()) break;
      chain.push_back(c->second);
    }
    if (chain.size() == chain_hi - chain_lo) {
      run.chain_first_page = chain_lo;
      run.chain = std::move(chain);
    }
  }
  return run;
}

Status DbStore::RebuildDerived(RepairReport* out, bool* changed) {
  std::vector<Manifest> manifests;
  std::vector<SnapshotManifest> snaps;
  {
    std::vector<SnapshotId> ids;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kManifests]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      SnapshotId id;
      const std::string key = it->key().ToString();
      if (!ParseSnapshotKey(key, &id.ns, &id.prefix)) continue;
      auto m = DecodeManifestRecord(key, Bytes(it->value()));
      if (!m.ok()) continue;
      ids.push_back(id);
      manifests.push_back(std::move(*m));
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan the manifests to rebuild"));
    for (size_t i = 0; i < ids.size(); ++i) snaps.push_back({ids[i], &manifests[i]});
  }
  return ledger_.RestoreDerived(
      snaps,
      [&](const SnapshotManifest& s, const std::map<uint32_t, Prefix>& chain) {
        return RebuildRunRecord(s.id.ns, s.id.prefix, *s.manifest, chain);
      },
      &out->not_repaired, changed);
}

}  // namespace auxstore::store_internal
