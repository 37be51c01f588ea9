#include <rocksdb/write_batch.h>

#include <chrono>
#include <thread>
#include <unordered_set>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"

namespace auxstore::store_internal {
namespace {

constexpr auto kTick = std::chrono::milliseconds(500);
constexpr int kRecencyEveryTicks = 10;  // persist recency every ~5 s
constexpr int kSweepEveryTicks = 120;   // sweep intents every ~60 s

}  // namespace

void DbStore::MaintenanceLoop() {
  LoadIndex();
  if (options_.read_only || !options_.background_maintenance) return;
  (void)SweepIntents();  // orphans left by a crash before the last close
  for (int tick = 1;; ++tick) {
    {
      std::unique_lock lock(maint_mu_);
      maint_cv_.wait_for(lock, kTick, [&] { return stop_ || poke_; });
      if (stop_) return;
      poke_ = false;
    }
    if (fenced_) continue;
    (void)MaintenancePass();
    if (tick % kRecencyEveryTicks == 0) (void)PersistRecency();
    if (tick % kSweepEveryTicks == 0) (void)SweepIntents();
  }
}

// Builds the snapshot index from the manifests (sizes, creation, the puts
// each one reads), the run records (what each put stored) and the persisted
// recency. Runs off the opening thread.
void DbStore::LoadIndex() {
  std::unordered_map<std::string, uint64_t> stored;  // PutKey -> bytes
  (void)ledger_.ForEachRun([&](const RunEntry& e) {
    // A damaged one (or a scan stopped by damage): verify finds it.
    if (!e.malformed && e.run.ok()) stored[PutKey(e.ns, e.put)] = e.run->stored_bytes();
    return true;
  });
  std::unordered_map<std::string, IndexEntry> loaded;
  std::unordered_set<std::string> unreadable;
  bool complete = false;  // every manifest read: lookups may trust the index
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf_[kManifests]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string key = it->key().ToString();
      NamespaceId ns = 0;
      Prefix prefix;
      if (!ParseSnapshotKey(key, &ns, &prefix)) continue;
      auto m = DecodeManifestRecord(key, Bytes(it->value()));
      if (!m.ok()) {  // found and quarantined by the first read of it
        unreadable.insert(key);
        continue;
      }
      IndexEntry e{m->payload_bytes(), m->created_unix_ms, m->created_unix_ms, {}};
      for (PutId put : UsedPuts(*m)) {
        auto s = stored.find(PutKey(ns, put));
        if (s != stored.end()) e.uses.emplace_back(s->first, s->second);
      }
      loaded[key] = std::move(e);
    }
    complete = it->status().ok();
  }
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_[kRecency]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      auto e = loaded.find(it->key().ToString());
      if (e == loaded.end() || it->value().size() != 8) continue;
      e->second.last_access_ms = static_cast<int64_t>(
          internal::GetLE64(reinterpret_cast<const uint8_t*>(it->value().data())));
    }
  }
  index_.FinishLoad(std::move(loaded), std::move(unreadable), complete);
}

Status DbStore::RunMaintenance() {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  AUXSTORE_RETURN_IF_ERROR(MaintenancePass());
  AUXSTORE_RETURN_IF_ERROR(PersistRecency());
  return SweepIntents();
}

void DbStore::WaitForIndex() {
  while (!index_.ready()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

Status DbStore::MaintenancePass(uint64_t ttl_seconds, uint64_t capacity_bytes) {
  if (!index_.ready()) return Status::Ok();  // budgets apply once sizes are known
  std::lock_guard pass(pass_mu_);
  if (ttl_seconds) {
    const int64_t cutoff = NowUnixMs() - static_cast<int64_t>(ttl_seconds) * 1000;
    for (const std::string& key : index_.ExpiredBefore(cutoff, NowUnixMs())) {
      Status s = EraseSnapshot(key, EraseReason::kExpiry);
      if (!s.ok() && !s.IsNotFound() && s.code() != StatusCode::kBusy) return s;
    }
  }
  if (capacity_bytes) {
    for (const std::string& key : index_.EvictionVictims(capacity_bytes, NowUnixMs())) {
      Status s = EraseSnapshot(key, EraseReason::kEviction);
      if (!s.ok() && !s.IsNotFound() && s.code() != StatusCode::kBusy) return s;
    }
  }
  return Status::Ok();
}

// Recency is a hint for eviction order: written in batches without sync.
Status DbStore::PersistRecency() {
  auto dirty = index_.TakeDirtyRecency();
  if (dirty.empty()) return Status::Ok();
  rocksdb::WriteBatch batch;
  for (const auto& [key, ms] : dirty) {
    std::string v;
    internal::AppendLE64(&v, static_cast<uint64_t>(ms));
    (void)batch.Put(cf_[kRecency], key, v);
  }
  return Guard(db_->Write(rocksdb::WriteOptions(), &batch), "persist recency");
}

// Removes the records of ingested puts that never committed: an intent
// (kIntentPrefix + PutKey -> the snapshot key) whose put has no run record.
Status DbStore::SweepIntents() {
  std::vector<std::pair<std::string, std::string>> intents;  // (PutKey, snapshot key)
  {
    std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(rocksdb::ReadOptions(), cf_[kMeta]));
    for (it->Seek(kIntentPrefix); it->Valid() && it->key().starts_with(kIntentPrefix); it->Next()) {
      auto skey = DecodeMeta(it->key().ToString(), Bytes(it->value()));
      intents.emplace_back(it->key().ToString().substr(std::string(kIntentPrefix).size()),
                           skey.ok() ? *skey : std::string());
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan write intents"));
  }
  for (const auto& [put_key, skey] : intents) {
    NamespaceId ns = 0;
    PutId put = 0;
    if (!ParsePutKey(put_key, &ns, &put)) continue;
    // A put in flight holds its snapshot's key lock from before its intent
    // until after its commit.
    std::optional<KeyLock> key_lock;
    if (!skey.empty()) key_lock.emplace(this, skey);
    std::string intent;
    rocksdb::Status i =
        db_->Get(rocksdb::ReadOptions(), cf_[kMeta], kIntentPrefix + put_key, &intent);
    if (i.IsNotFound()) continue;  // committed, or another sweep got here first
    if (!i.ok()) return FromRocks(i, "sweep orphans");
    auto has_run = ledger_.HasRun(ns, put);
    if (!has_run.ok()) return has_run.error().WithContext("sweep orphans");
    if (!*has_run) {
      ++orphans_seen_;
      AUXSTORE_RETURN_IF_ERROR(DeleteRecordsOfPut(ns, put));
      ++orphans_removed_;
    }
    AUXSTORE_RETURN_IF_ERROR(Guard(
        db_->Delete(rocksdb::WriteOptions(), cf_[kMeta], kIntentPrefix + put_key), "clear intent"));
  }
  return Status::Ok();
}

}  // namespace auxstore::store_internal
