// DbStore: the Store on RocksDB. Split by concern across db_store_open.cc
// (open/close, version and watermark checks), db_store_write.cc (namespaces,
// snapshots, erase), db_store_read.cc (manifests, layers, lookups, listing)
// and db_store_maintenance.cc (index load, TTL, LRU, orphans, recency).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/sst_file_writer.h>

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "auxstore/store.h"
#include "store/rocks_options.h"
#include "store/snapshot_index.h"
#include "store/store_dir.h"

namespace auxstore::store_internal {

inline constexpr uint32_t kStoreFormatVersion = 1;

// rocksdb::Status -> Status, with `what` naming the operation.
Status FromRocks(const rocksdb::Status& s, const std::string& what);
int64_t NowUnixMs();
// A manifest record's value: envelope (under its key) and manifest decoded.
Result<Manifest> DecodeManifestRecord(const std::string& key, ByteSpan value);

class DbStore final : public Store {
 public:
  // `fs`: the file system RocksDB runs on (null = the real one). Fault-
  // injection tests pass their own; see store/open_on_file_system.h.
  static Result<std::unique_ptr<Store>> Open(const Options& options, const std::string& path,
                                             std::shared_ptr<rocksdb::FileSystem> fs = nullptr);
  ~DbStore() override;

  Result<NamespaceId> RegisterNamespace(const NamespaceSpec& spec) override;
  Result<NamespaceSpec> GetNamespace(NamespaceId ns) override;
  Result<std::vector<std::pair<NamespaceId, NamespaceSpec>>> ListNamespaces() override;
  Status PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                     std::span<const LayerBlob> layers, const PutOptions& put) override;
  Result<Manifest> GetManifest(NamespaceId ns, const Prefix& prefix) override;
  Status ReadLayer(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                   const ChunkSink& sink) override;
  Result<std::vector<uint8_t>> GetLayer(NamespaceId ns, const Prefix& prefix,
                                        uint32_t layer) override;
  Status ReadChunkInto(NamespaceId ns, const Prefix& prefix, const Manifest& manifest,
                       uint32_t layer, uint32_t chunk, std::span<uint8_t> dst,
                       BlobHasher* blob_hash) override;
  Status Quarantine(NamespaceId ns, const Prefix& prefix, const Status& why) override;
  Status QuarantineIfUnchanged(NamespaceId ns, const Prefix& prefix, const Manifest& seen,
                               const Status& why) override;
  Result<std::optional<size_t>> LongestPrefix(NamespaceId ns,
                                              std::span<const Prefix> candidates) override;
  Result<std::optional<PrefixMatch>> FindLongestPrefix(NamespaceId ns,
                                                       std::span<const Prefix> candidates,
                                                       const LookupOptions& options) override;
  Result<std::optional<TokenMatch>> LongestPrefixForTokens(NamespaceId ns,
                                                           std::span<const uint32_t> tokens,
                                                           uint32_t block_size, uint64_t salt,
                                                           const LookupOptions& options) override;
  Result<LeaseId> AcquireLease(NamespaceId ns, const Prefix& prefix, uint64_t lease_ms) override;
  Status ReleaseLease(LeaseId lease) override;
  Result<std::vector<std::optional<Manifest>>> GetManifests(
      NamespaceId ns, std::span<const Prefix> prefixes) override;
  Result<uint64_t> ReadLayerInto(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                 std::span<uint8_t> dst) override;
  Status Erase(NamespaceId ns, const Prefix& prefix) override;
  Status List(std::optional<NamespaceId> ns,
              const std::function<bool(const SnapshotInfo&)>& visit) override;
  StoreStats Stats() override;
  Status Flush() override;
  Status RunMaintenance() override;
  Result<VerifyReport> Verify(const VerifyOptions& options) override;
  Result<RepairReport> Repair(const VerifyReport& report) override;
  Result<CompactReport> Compact(const CompactOptions& options) override;
  uint64_t DiskBytes() override;

 private:
  DbStore(const Options& options, std::string path, std::shared_ptr<rocksdb::FileSystem> fs);

  // ---- open (db_store_open.cc)
  Status OpenDb();
  Status OpenRocks(bool read_only, bool create);
  enum class Families { kComplete, kIncomplete };
  Result<Families> CheckFamilies();
  Status CreateDb(bool created_dir);
  Status OpenExistingDb(const DirCheck& dir);
  // Opens read-only, runs CheckRecovered, closes: an existing store's checks
  // on a handle that writes nothing.
  Status ProbeReadOnly();
  Status OpenForReading();
  // `watermark`: ReadWatermark as it was before RocksDB recovered.
  Status CheckRecovered(bool fresh, Result<uint64_t> watermark);
  Status CheckFormatVersion(bool fresh);
  Status CheckWatermark(bool fresh, Result<uint64_t> watermark);
  Status LoadMetaCounters();
  void CloseDb();

  // auxstore's own log records, to Options::log_sink (log.h).
  void Log(LogLevel level, const std::string& message) const;

  // ---- writes (db_store_write.cc)
  Status CheckWritable() const;
  // Runs a write; on failure fences the handle (reliability-notes #2).
  Status Guard(const rocksdb::Status& s, const std::string& what);
  // One SST file of `layers`' records (sorted), its checksum in `info`.
  Status WriteSst(const std::string& file, NamespaceId ns, const Prefix& prefix,
                  std::span<const LayerBlob> layers, rocksdb::ExternalSstFileInfo* info);
  Status WriteIngested(NamespaceId ns, const Prefix& prefix, std::span<const LayerBlob> layers,
                       const Manifest& manifest);
  Status WriteBatched(NamespaceId ns, const Prefix& prefix, std::span<const LayerBlob> layers,
                      const Manifest& manifest);
  // Adds the manifest to `batch` and commits it.
  Status CommitManifest(rocksdb::WriteBatch* batch, NamespaceId ns, const Prefix& prefix,
                        const Manifest& manifest);
  // Adds the next commit sequence to `batch` and writes it (synced: then
  // the watermark advances). CommitLocked: the caller holds commit_mu_.
  Status Commit(rocksdb::WriteBatch* batch, bool sync, const std::string& what);
  Status CommitLocked(rocksdb::WriteBatch* batch, bool sync, const std::string& what);
  Status AdvanceWatermark(uint64_t seq);
  // Removes a snapshot (manifest durably first, then records). `kind` counts it.
  enum class EraseReason { kUser, kEviction, kExpiry };
  // NotFound (and *absent set, when given) when there is no such snapshot.
  Status EraseSnapshot(const std::string& snapshot_key, EraseReason reason,
                       bool* absent = nullptr);
  Status DeleteRecords(NamespaceId ns, const Prefix& prefix);
  // Whether any record is stored under (ns, prefix).
  Result<bool> HasRecords(NamespaceId ns, const Prefix& prefix);

  // ---- reads (db_store_read.cc)
  Result<Manifest> LoadManifest(NamespaceId ns, const Prefix& prefix);
  Result<std::vector<std::optional<Manifest>>> MultiGetManifests(NamespaceId ns,
                                                                 std::span<const Prefix> prefixes);
  Result<NamespaceSpec> NamespaceSpecFor(NamespaceId ns);
  // One record read without copying its value: an iterator positioned on
  // it, the value left in RocksDB's block buffer for as long as the iterator
  // lives. (Get would copy it: 7.8.3 pins a value only when its block sits in
  // the block cache, and chunk reads bypass the cache.)
  struct PinnedRecord {
    std::string upper_bound;
    rocksdb::Slice upper_bound_slice;
    std::unique_ptr<rocksdb::Iterator> it;
    rocksdb::Slice value;
  };
  // NotFound when no record has `key`; the value is not verified here.
  Status PinRecord(const std::string& key, PinnedRecord* out);
  // PinRecord of a layer chunk; a missing one is Corruption (a torn snapshot).
  Status PinChunk(NamespaceId ns, const Prefix& prefix, uint32_t layer, uint32_t chunk,
                  PinnedRecord* record);
  // The one definition of a good chunk (reads, restores, Verify): its
  // envelope decodes under its own key, it holds the record kind of the
  // layer's kind and exactly the bytes the manifest implies. Feeds its
  // payload to `blob_hash` (may be null) in the same pass and, when
  // `copy_to` is given, copies it there (exactly the chunk's size).
  Status VerifyChunk(NamespaceId ns, const Prefix& prefix, const LayerEntry& entry,
                     uint32_t chunk_bytes, uint32_t chunk, ByteSpan value, BlobHasher* blob_hash,
                     std::span<uint8_t>* copy_to, ByteSpan* payload);
  void Touch(NamespaceId ns, const Prefix& prefix);
  // Quarantines the snapshot if its stored manifest value still passes
  // `still_same` (null: any) and returns `why`; returns NotFound when it was
  // erased or replaced meanwhile (a reader raced a writer: no damage).
  using ManifestCheck = std::function<bool(const std::string& current_value)>;
  Status QuarantineIf(NamespaceId ns, const Prefix& prefix, const ManifestCheck& still_same,
                      const Status& why);
  // A check that the stored manifest still decodes to `m`.
  static ManifestCheck SameManifest(const std::string& key, const Manifest& m);

  // ---- verification (db_store_verify.cc)
  class Verifier;
  // Reads every record of one snapshot and checks it (VerifyChunk, the
  // codec check of each layer's head, CheckLayerDigest). OK, or Corruption
  // with the damaged layer in *layer. Counts into `report` when given.
  Status VerifySnapshot(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                        std::optional<uint32_t>* layer, VerifyReport* report);

  // ---- maintenance (db_store_maintenance.cc)
  void MaintenanceLoop();
  void LoadIndex();
  void WaitForIndex();
  Status MaintenancePass() { return MaintenancePass(options_.ttl_seconds, options_.capacity_bytes); }
  Status MaintenancePass(uint64_t ttl_seconds, uint64_t capacity_bytes);
  // Compact's orphan pass: record groups with no manifest, and records a
  // manifest does not name.
  Status RemoveOrphans(CompactReport* report);
  Status PersistRecency();
  Status SweepIntents();

  // Serializes writers of the same snapshot key (puts, erases, sweeps).
  class KeyLock;
  std::mutex inflight_mu_;
  std::condition_variable inflight_cv_;
  std::set<std::string> inflight_;

  const Options options_;
  const std::string path_;
  WriterLock lock_;  // a writer's, held until after db_ is closed
  bool had_store_marker_ = false;  // AUXSTORE-LOCK or the watermark before this open
  RocksSetup setup_;
  std::unique_ptr<rocksdb::DB> db_;
  bool db_read_only_ = false;  // db_ came from OpenForReadOnly
  std::vector<rocksdb::ColumnFamilyHandle*> cf_;

  std::mutex commit_mu_;  // commit sequence, watermark, meta counters
  uint64_t commit_seq_ = 0;
  uint64_t watermark_ = 0;
  uint64_t quarantines_ = 0;
  uint64_t lost_commits_at_open_ = 0;
  std::atomic<uint64_t> ingest_counter_{0};

  std::atomic<bool> fenced_{false};
  std::string fence_reason_;  // set once, under commit_mu_

  std::shared_mutex ns_mu_;
  std::map<NamespaceId, NamespaceSpec> namespaces_;

  SnapshotIndex index_;
  std::atomic<uint64_t> hits_{0}, misses_{0}, puts_{0}, duplicate_puts_{0}, evictions_{0},
      expirations_{0}, orphans_seen_{0}, orphans_removed_{0}, bytes_written_{0}, bytes_read_{0};

  std::mutex maint_mu_;
  std::condition_variable maint_cv_;
  bool stop_ = false;
  bool poke_ = false;
  std::thread maint_thread_;
};

// Holds one snapshot key exclusively: concurrent puts of the same prefix
// wait, then see the first one's manifest and become no-ops.
class DbStore::KeyLock {
 public:
  KeyLock(DbStore* s, std::string key) : s_(s), key_(std::move(key)) {
    std::unique_lock lock(s_->inflight_mu_);
    s_->inflight_cv_.wait(lock, [&] { return !s_->inflight_.count(key_); });
    s_->inflight_.insert(key_);
  }
  ~KeyLock() {
    {
      std::lock_guard lock(s_->inflight_mu_);
      s_->inflight_.erase(key_);
    }
    s_->inflight_cv_.notify_all();
  }
  KeyLock(const KeyLock&) = delete;
  KeyLock& operator=(const KeyLock&) = delete;

 private:
  DbStore* s_;
  std::string key_;
};

}  // namespace auxstore::store_internal
