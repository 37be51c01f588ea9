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
#include <xxhash.h>

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
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/page_ledger_rocks.h"
#include "store/record_check.h"
#include "store/sst_block_salvage.h"

namespace auxstore::store_internal {
namespace {

constexpr size_t kRewriteBatchBytes = 8u << 20;

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

// Keys of column family `cf` the other families name, ascending: where a
// walk stopped by a damaged block can resume. Refs and page entries need
// none (RebuildDerived writes every one the manifests need).
std::vector<std::string> DbStore::RewriteCandidates(int cf) {
  std::set<std::string> out;
  auto manifests = [&](const std::function<void(NamespaceId, const Manifest&)>& f) {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kManifests]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      NamespaceId ns = 0;
      Prefix prefix;
      if (!ParseSnapshotKey(it->key().ToStringView(), &ns, &prefix)) continue;
      auto m = DecodeManifestRecord(it->key().ToString(), Bytes(it->value()));
      if (m.ok()) f(ns, *m);
    }
  };
  if (RocksPageLedger::OwnsFamily(cf)) {
    if (cf != kRuns) return {};
    std::vector<std::pair<NamespaceId, PutId>> puts;
    manifests([&](NamespaceId ns, const Manifest& m) {
      for (PutId put : UsedPuts(m)) puts.emplace_back(ns, put);
    });
    return RocksPageLedger::RunKeys(puts);
  }
  if (cf == kManifests) {
    (void)ledger_.ForEachRef([&](const RefEntry& e) {
      if (!e.malformed) out.insert(SnapshotKey(e.snapshot.ns, e.snapshot.prefix));
      return true;
    });
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(HotReadOptions(), cf_[kRecency]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) out.insert(it->key().ToString());
  } else if (cf == kRecords) {
    (void)ledger_.ForEachRun([&](const RunEntry& e) {
      if (e.malformed || !e.run.ok()) return true;
      const RunRecord& rec = *e.run;
      for (const RunLayer& rl : rec.layers) {
        for (size_t a = 0; a < rl.arrays.size(); ++a) {
          const uint64_t stream = uint64_t{rl.pages} * rec.page_tokens * rl.arrays[a].row_bytes +
                                  rl.arrays[a].tail_bytes;
          const uint32_t chunks = ChunkCount(stream, rec.chunk_bytes);
          for (uint32_t c = 0; c < chunks; ++c) {
            out.insert(RecordKey(e.ns, e.put, rl.layer, static_cast<uint8_t>(a), c));
          }
        }
      }
      return true;
    });
  }
  return {out.begin(), out.end()};
}

Status DbStore::RewriteFamily(int cf, const std::set<std::string>& damaged, RepairReport* out) {
  rocksdb::ColumnFamilyHandle* h = cf_[cf];
  const std::string name = setup_.cfs[cf].name;
  // No compaction may read the damaged file meanwhile.
  const bool auto_off = db_->GetOptions(h).disable_auto_compactions;
  AUXSTORE_RETURN_IF_ERROR(FromRocks(db_->SetOptions(h, {{"disable_auto_compactions", "true"}}),
                                     "hold compactions of " + name));
  std::vector<rocksdb::LiveFileMetaData> before;
  {
    std::vector<rocksdb::LiveFileMetaData> live;
    db_->GetLiveFilesMetaData(&live);
    for (auto& f : live) {
      if (f.column_family_name == name) before.push_back(std::move(f));
    }
  }
  uint64_t kept = 0, dropped = 0, salvaged = 0;
  {
    // Block checksums stay on: a damaged block is never parsed (RocksDB's
    // parser may abort on one). The walk resumes past it at the next key
    // the other families name (RewriteCandidates) that reads.
    rocksdb::ReadOptions ro = HotReadOptions();
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, h));
    rocksdb::WriteBatch batch;
    std::string last;
    std::optional<std::vector<std::string>> candidates;
    std::set<std::string> kept_keys;  // manifests only: the snapshots that stay
    std::set<std::string> blocks_seen;
    // The entries of the damaged block a read stopped at (sst_block_salvage),
    // each checked by its envelope and kept only where no other version
    // reads (the lookup of its key fails on the damaged block itself).
    // Not records: a snapshot with records in a damaged block is removed and
    // reported, as repair always did (a read of it failed).
    auto salvage = [&](const rocksdb::Status& st) {
      if (cf == kRecords) return;
      auto b = DamagedBlockOf(st.ToString());
      if (!b || !blocks_seen.insert(b->file + "@" + std::to_string(b->offset)).second) return;
      std::set<std::string> decided;  // a block holds a key's newest version first
      for (const SalvagedEntry& e : SalvageDataBlock(*b)) {
        if (!decided.insert(e.user_key).second || !e.is_value) continue;
        if (!KeepEntry(cf, e.user_key, e.value)) continue;
        std::string current;
        if (!db_->Get(HotReadOptions(), h, e.user_key, &current).IsCorruption()) continue;
        (void)batch.Put(h, e.user_key, e.value);
        if (cf == kManifests) kept_keys.insert(e.user_key);
        ++salvaged;
      }
    };
    size_t next = 0;
    for (it->SeekToFirst();;) {
      for (; it->Valid(); it->Next()) {
        last = it->key().ToString();
        if (!KeepEntry(cf, it->key(), it->value())) {
          ++dropped;
          continue;
        }
        ++kept;
        if (cf == kManifests) kept_keys.insert(last);
        (void)batch.Put(h, it->key(), it->value());
        if (batch.GetDataSize() >= kRewriteBatchBytes) {
          AUXSTORE_RETURN_IF_ERROR(
              Guard(db_->Write(rocksdb::WriteOptions(), &batch), "rewrite " + name));
          batch.Clear();
        }
      }
      if (it->status().ok()) break;
      ++dropped;  // a damaged block
      salvage(it->status());
      if (!candidates) candidates = RewriteCandidates(cf);
      bool resumed = false;
      while (!resumed && next < candidates->size()) {
        const std::string& c = (*candidates)[next++];
        if (c <= last) continue;
        it->Seek(c);
        resumed = it->status().ok();
        if (!resumed) salvage(it->status());
      }
      if (!resumed) break;
    }
    AUXSTORE_RETURN_IF_ERROR(Guard(db_->Write(rocksdb::WriteOptions(), &batch), "rewrite " + name));
    // Snapshots whose manifest sat in a damaged block (named by their refs).
    for (const std::string& key : candidates ? *candidates : std::vector<std::string>()) {
      CorruptSnapshot c;
      if (cf != kManifests || kept_keys.count(key) || !ParseSnapshotKey(key, &c.ns, &c.prefix)) {
        continue;
      }
      c.why = "Corruption: its manifest record is in a damaged block";
      out->removed.push_back(std::move(c));
    }
  }
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->FlushWAL(true), "sync the rewrite of " + name));
  rocksdb::FlushOptions fo;
  fo.wait = true;
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->Flush(fo, h), "flush the rewrite of " + name));
  AUXSTORE_RETURN_IF_ERROR(DropFamilyFiles(cf, std::move(before), damaged, auto_off));
  Log(LogLevel::kWarn,
      "repair rewrote " + name + " around its damaged files: " + std::to_string(kept) +
          " entries kept, " + std::to_string(salvaged) + " salvaged from damaged blocks, " +
          std::to_string(dropped) + " damaged blocks or entries lost");
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
