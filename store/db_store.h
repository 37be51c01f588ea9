// DbStore: the Store on RocksDB. Split by concern across db_store_open.cc
// (open/close, version and watermark checks), db_store_write.cc (namespaces,
// commits, record files), db_store_put.cc (snapshots and their pages),
// db_store_reclaim.cc (erase, quarantine, reclaiming unused puts),
// db_store_read.cc (manifests, layers, lookups, listing),
// db_store_maintenance.cc (index load, TTL, LRU, intents, recency),
// db_store_verify.cc (the Verifier: db_store_verifier.h) and
// db_store_compact.cc (the offline tools' work). The paged data model (run
// records, page index, refs, pins) is the page ledger's alone
// (page_ledger.h; ledger_ below): every one of these files goes through it.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>

#include <atomic>
#include <boost/asio/thread_pool.hpp>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "auxstore/store.h"
#include "format/run_record.h"
#include "store/commit_batch.h"
#include "store/direct_records.h"
#include "store/page_ledger_rocks.h"
#include "store/rocks/rocks_options.h"
#include "store/snapshot_index.h"
#include "store/store_dir.h"

namespace auxstore::store_internal {

// 1: whole layers per snapshot (auxstore 0.x). 2: pages shared across
// snapshots, records per put (docs/format.md, "Versions").
inline constexpr uint32_t kStoreFormatVersion = 2;

// NotSupported naming both versions and the way forward.
Status FormatVersionRefusal(const std::string& path, uint64_t version);
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

  // Tests only (store_relayout_test): run by the reads into caller memory
  // between their manifest read and their first record read, where a test
  // moves the snapshot to meet that race every time. Set before reads run.
  void SetAfterManifestReadForTest(std::function<void()> hook) {
    after_manifest_read_ = std::move(hook);
  }
  // Snapshot reads into caller memory that were copied in lanes.
  uint64_t LaneReadsForTest() const { return lane_reads_.load(); }
  // The reader of chunk records straight from table files (null while no
  // database is open): its count of pieces read, and its switch.
  DirectRecords* DirectRecordsForTest() { return direct_.get(); }
  // Whether copies into caller memory read large pieces from the table
  // files (ReadMode::direct).
  bool DirectReads() const { return direct_ && direct_->enabled(); }

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
  Result<std::unique_ptr<LayerReader>> OpenLayer(NamespaceId ns, const Prefix& prefix,
                                                 const Manifest& manifest, uint32_t layer,
                                                 PieceChecks checks) override;
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
  Status ReadLayersInto(NamespaceId ns, const Prefix& prefix, std::span<LayerInto> layers) override;
  void ReadSnapshotsInto(std::span<SnapshotInto> snapshots) override;
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
  // The connector's batched calls (db_store_batch.cc).
  Result<size_t> CountLeadingStored(NamespaceId ns, std::span<const Prefix> prefixes) override;
  Result<ChainPages> CountLeadingPages(NamespaceId ns, std::span<const Prefix> block_chain,
                                       uint32_t block_size) override;
  Result<BatchLeases> LookupAndLease(NamespaceId ns, std::span<const Prefix> prefixes,
                                     uint64_t lease_ms) override;
  // Row ranges (store_rows_paged.cc): of a paged layer, only the records
  // holding the rows, each verified on its own; others as Store's.
  Result<LayerRows> ReadLayerRows(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                  uint64_t first_row, uint64_t last_row,
                                  std::span<uint8_t> dst) override;

 private:
  DbStore(const Options& options, std::string path, std::shared_ptr<rocksdb::FileSystem> fs);

  // ---- open (db_store_open.cc)
  Status OpenDb();
  Status OpenRocks(bool read_only, bool create);
  rocksdb::Status OpenRocksWith(const rocksdb::DBOptions& db, bool read_only, rocksdb::DB** raw);
  enum class Families { kComplete, kIncomplete };
  Result<Families> CheckFamilies();
  // After RocksDB refused the MANIFEST: when only its tail is broken
  // (manifest_tail.h), every later open of this store reads it up to its
  // last valid record (capped_env_) and this returns true; otherwise false,
  // with what the scan found in `finding`.
  bool SkipBrokenManifestTail(std::string& finding);
  // When CURRENT names a MANIFEST a power cut dropped (DirCheck's
  // missing_manifest), every open of this handle reads CURRENT as naming the
  // MANIFEST before it (current_env_, current_override_fs.h).
  void ReadThroughOlderManifest(const DirCheck& dir);
  // The format version a store with only `families` records, read on a
  // read-only handle of those; nullopt when it has none (or cannot say).
  Result<std::optional<uint64_t>> PeekFormatVersion(const std::vector<std::string>& families);
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
  // One (layer, array) byte stream a put stores: its own pages and tail.
  struct OwnStream {
    uint32_t layer = 0;
    uint8_t array = 0;
    Kind kind = Kind::kOpaque;
    ByteSpan bytes;
  };
  using RecordEmit = std::function<Status(const std::string& key, const std::string& value)>;
  // Every record of `streams` (sorted by layer, then array), in key order.
  Status ForEachRecord(NamespaceId ns, PutId put, std::span<const OwnStream> streams,
                       const RecordEmit& emit);
  // One SST file of `streams`' records, its checksum in `info`.
  Status WriteSst(const std::string& file, NamespaceId ns, PutId put,
                  std::span<const OwnStream> streams, rocksdb::ExternalSstFileInfo* info);
  // The records as SST files moved into the tree, under a write intent
  // (value: the snapshot key) the commit batch clears.
  Status WriteIngested(NamespaceId ns, PutId put, const std::string& snapshot_key,
                       std::span<const OwnStream> streams);
  // Adds the manifest to `batch` and commits it. `shares_pages`: it reads
  // pages of earlier puts, whose commits are made durable first (kAsync).
  Status CommitManifest(rocksdb::WriteBatch* batch, NamespaceId ns, const Prefix& prefix,
                        const Manifest& manifest, bool shares_pages);
  // Adds the next commit sequence to `batch` and writes it (synced: then
  // the watermark advances). CommitLocked: the caller holds commit_mu_.
  Status Commit(rocksdb::WriteBatch* batch, bool sync, const std::string& what);
  Status CommitLocked(rocksdb::WriteBatch* batch, bool sync, const std::string& what);
  Status AdvanceWatermark(uint64_t seq);
  // Caller holds commit_mu_: every commit so far made durable (WAL synced,
  // watermark advanced); Unavailable on a fenced store.
  Status SyncCommitsLocked(const std::string& what);

  // ---- puts (db_store_put.cc): validate, hash the pages, share (the page
  // ledger), assemble the manifest and run record, store and commit.
  PutId NewPutId();
  struct PutPlan;
  Status PlanLayers(const NamespaceSpec& spec, uint64_t token_count,
                    std::span<const LayerBlob> layers, PutPlan* plan);
  void HashPages(PutPlan* plan);
  Status SharePages(PutPlan* plan);
  Status AssemblePut(uint64_t token_count, PutPlan* plan);
  Status StorePut(const std::string& snapshot_key, PutPlan* plan);
  Status StageRecords(const std::string& snapshot_key, const PutPlan* plan, CommitBatch* batch);
  static PutEntries EntriesOf(const PutPlan& plan);

  // ---- compaction's re-layout (db_store_relayout.cc)
  struct RelayoutBases;
  Status RelayoutChains(CompactReport* report);
  Status RelayoutSnapshot(const std::string& snapshot_key, RelayoutBases* bases,
                          CompactReport* report);

  // ---- removal and reclaim (db_store_reclaim.cc)
  enum class EraseReason { kUser, kEviction, kExpiry };
  // NotFound (and *absent set, when given) when there is no such snapshot.
  Status EraseSnapshot(const std::string& snapshot_key, EraseReason reason, bool* absent = nullptr);
  // Caller holds the key lock. Removes the manifest and its refs and
  // reclaims the puts nobody uses any more (`quarantine`: counts one).
  Status RemoveSnapshot(NamespaceId ns, const Prefix& prefix, const std::string& manifest_value,
                        const Status* quarantine, const std::string& what);
  // What the page ledger needs of the store: commits, record deletion.
  LedgerHost MakeLedgerHost();
  Status DeleteRecordsOfPut(NamespaceId ns, PutId put);
  // A damaged record of put `owner`: quarantines every snapshot using it.
  Status QuarantineRecord(NamespaceId ns, PutId owner, uint32_t layer, uint8_t array,
                          uint32_t chunk, const Status& why);

  // ---- reads (db_store_read.cc)
  Result<Manifest> LoadManifest(NamespaceId ns, const Prefix& prefix);
  // What a lookup of the manifest `key` found (`looked_up`, `value`), as
  // LoadManifest returns it: NotFound, the read error, or the manifest
  // decoded, a damaged one quarantined (Corruption; NotFound when replaced
  // meanwhile). ReadSnapshotsInto's MultiGet shares it.
  Result<Manifest> ManifestFromLookup(NamespaceId ns, const Prefix& prefix, const std::string& key,
                                      const rocksdb::Status& looked_up, std::string_view value);
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
  // The error of a records iterator that failed reading `key`. A Seek also
  // reads blocks of table files that cannot hold `key` (with few L0 files,
  // every one of them): damage there is a store problem (IOError, which
  // quarantines nothing; `verify --repair` rewrites the family), never a
  // reason to call a healthy record, and its snapshot, corrupt.
  Status RecordReadError(const std::string& key, const rocksdb::Status& s);
  // ---- the layer reader (layer_reader.cc): the only code that verifies a
  // layer (include/auxstore/layer_reader.h).
  class PieceReader;
  class LayerCursor;
  // Row ranges' records and damage (store_rows_paged.cc).
  class RowRecords;
  // ReadLayerRows under a loaded manifest.
  Result<LayerRows> ReadRowsUnder(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                                  uint32_t layer, uint64_t first_row, uint64_t last_row,
                                  std::span<uint8_t> dst);
  Status RowRecordDamaged(NamespaceId ns, const Prefix& prefix, const Manifest& m, uint32_t layer,
                          const LayerPiece& piece, Status why);
  // Damage found by a read of ReadMode::hold_damage, not yet quarantined:
  // one layer's (its reader stops at the first damage).
  struct HeldDamage {
    uint32_t layer = 0;
    std::optional<LayerPiece> piece;  // the damaged record's, when one is
    Status why;                       // OK: none found
  };
  struct ReadMode {
    // Pieces read ahead on read_pool_ while the caller verifies the ones
    // before (ReadLayer's streaming; every block read then stays pinned
    // until the reader goes, but for pieces of 1 MiB and more, each held by
    // an iterator of its own until the next read); 0: each read where it is
    // asked for.
    size_t read_ahead = 0;
    // Verify's reads: damage is decided as always, but nothing is
    // quarantined and nothing counted in Stats::bytes_read.
    bool verify_only = false;
    // Copies into caller memory (ReadInto): each record's own checksum is
    // skipped while the layer digest covers every byte copied; when the
    // digest differs the records are decoded again with their checksums, so
    // a damaged record is still named and quarantined. One hash pass per
    // byte instead of two (the caller's bytes are unusable until the
    // layer's last piece returns OK, as always).
    bool digest_first = false;
    // Read ahead only pieces big enough for an iterator of their own
    // (PieceReader::kOwnIteratorBytes): for records readers that do not pin
    // (ReadLayersInto's, shared by a snapshot's layers), whose iterators
    // must not move while the caller checks a piece they hold.
    bool ahead_large_only = false;
    // Damage found is held here, not quarantined (lanes: the snapshot stays
    // until every lane stopped, so that the layers before the damaged one
    // read as they would in turn); the holder quarantines it then.
    HeldDamage* hold_damage = nullptr;
    // Pieces read from the table files where they can be
    // (direct_records.h): copies into caller memory (with digest_first)
    // straight into the destination; a stream's into a buffer of its
    // reader's, each record's checksum checked before it is handed on.
    bool direct = false;
  };
  // NotFound when `manifest` has no layer `layer`; a header-only layer's
  // digest is checked here.
  Result<std::unique_ptr<LayerReader>> OpenCursor(NamespaceId ns, const Prefix& prefix,
                                                  Manifest manifest, uint32_t layer, ReadMode mode);
  // The same over a shared manifest, reading records through `records`:
  // the cursors of one snapshot's layers, opened one after another, share
  // one iterator per owner put (ReadLayersInto).
  Result<std::unique_ptr<LayerReader>> OpenCursor(NamespaceId ns, const Prefix& prefix,
                                                  std::shared_ptr<const Manifest> manifest,
                                                  uint32_t layer, ReadMode mode,
                                                  std::shared_ptr<PieceReader> records);
  // `across_puts`: one iterator for every owner put, bounded by the end of
  // the namespace (many small snapshots, each its own put, read one after
  // another: ReadSnapshotsInto makes one iterator, not one per snapshot).
  // Otherwise one iterator per owner put.
  std::shared_ptr<PieceReader> NewPieceReader(NamespaceId ns, ReadMode mode,
                                              bool across_puts = false);
  // Reads the first piece of `layer` of `m` on the read pool when it is big
  // enough for an iterator of its own, for `records`' next Read of it: the
  // next layer's block comes in while the caller copies this one's.
  void PrefetchFirstPiece(PieceReader& records, NamespaceId ns, const Manifest& m, uint32_t layer);
  // A layer of a loaded manifest into `dst` (ReadLayerInto without the
  // manifest read and the touch).
  Result<uint64_t> CopyLayerInto(NamespaceId ns, const Prefix& prefix,
                                 const std::shared_ptr<const Manifest>& manifest, uint32_t layer,
                                 std::span<uint8_t> dst,
                                 const std::shared_ptr<PieceReader>& records,
                                 HeldDamage* hold_damage = nullptr,
                                 const std::function<bool()>& abandon = nullptr);
  // ReadLayersInto after its manifest read (and its touch), its records
  // through `records` (null: a reader of its own). A snapshot replaced
  // while read is read again under its new manifest (ReadAgainUnder).
  Status ReadLayersOf(NamespaceId ns, const Prefix& prefix,
                      std::shared_ptr<const Manifest> manifest, std::span<LayerInto> layers,
                      std::shared_ptr<PieceReader> records = nullptr);
  // One pass of ReadLayersOf under `manifest`: every layer's outcome set,
  // except, possibly, of layers after the one returned: the first whose
  // error ends the snapshot's reads (erased, replaced or damaged), if any.
  // In turn (sharing `records`, the next layer's first piece prefetched),
  // or in read_lanes_ lanes, each with a records reader of its own.
  std::optional<size_t> CopyLayersInTurn(NamespaceId ns, const Prefix& prefix,
                                         const std::shared_ptr<const Manifest>& manifest,
                                         std::span<LayerInto> layers,
                                         std::shared_ptr<PieceReader> records);
  std::optional<size_t> CopyLayersInLanes(NamespaceId ns, const Prefix& prefix,
                                          const std::shared_ptr<const Manifest>& manifest,
                                          std::span<LayerInto> layers);
  // Whether `layers` of `m` give lanes work: besides the largest, they
  // hold kLanesFromBytes or more.
  bool WorthLanes(const Manifest& m, std::span<const LayerInto> layers) const;
  static constexpr uint64_t kLanesFromBytes = 1u << 20;
  // A read of `layer` under `read` that ended with `outcome`: the manifest
  // to read it again under when the snapshot was replaced meanwhile (a put
  // of its prefix, or Compact moving its pages) and this was read
  // `attempt` of at most kReadAttempts; null otherwise (read, erased,
  // unchanged, or another error). The layer reader answers a replacement
  // with NotFound; the reads that write only the caller's buffer repeat.
  static constexpr int kReadAttempts = 4;
  std::shared_ptr<const Manifest> ReadAgainUnder(NamespaceId ns, const Prefix& prefix,
                                                 const Manifest& read, uint32_t layer,
                                                 const Status& outcome, int attempt);
  // `read(manifest)` of `layer` (a Result), again under each manifest
  // ReadAgainUnder names: GetLayer's and ReadLayerRows' loop.
  template <typename Read>
  auto ReadUnderLatest(NamespaceId ns, const Prefix& prefix,
                       std::shared_ptr<const Manifest> manifest, uint32_t layer, const Read& read)
      -> decltype(read(manifest)) {
    for (int attempt = 1;; ++attempt) {
      auto got = read(manifest);
      if (got.ok()) return got;
      auto again = ReadAgainUnder(ns, prefix, *manifest, layer, got.status(), attempt);
      if (!again) return got;
      manifest = std::move(again);
    }
  }
  void AfterManifestRead() {
    if (after_manifest_read_) after_manifest_read_();
  }
  // ReadLayer under a loaded manifest (the touch included).
  Status StreamLayer(NamespaceId ns, const Prefix& prefix, std::shared_ptr<const Manifest> manifest,
                     uint32_t layer, const ChunkSink& sink);
  void Touch(NamespaceId ns, const Prefix& prefix);
  // Quarantines the snapshot if its stored manifest value still passes
  // `still_same` (null: any) and returns `why`; returns NotFound when it was
  // erased or replaced meanwhile (a reader raced a writer: no damage).
  using ManifestCheck = std::function<bool(const std::string& current_value)>;
  Status QuarantineIf(NamespaceId ns, const Prefix& prefix, const ManifestCheck& still_same,
                      const Status& why);
  // A check that the stored manifest still decodes to `m`.
  static ManifestCheck SameManifest(const std::string& key, const Manifest& m);
  // A layer reader's damage: the damaged record's users (when `piece` names
  // it) and the snapshot, if still `same`.
  void QuarantineDamage(NamespaceId ns, const Prefix& prefix, const ManifestCheck& same,
                        uint32_t layer, const LayerPiece* piece, const Status& why);
  // QuarantineDamage of what `held` holds, if the snapshot is still the one
  // `manifest` describes.
  void QuarantineHeld(NamespaceId ns, const Prefix& prefix, const Manifest& manifest,
                      const HeldDamage& held);

  // ---- verification (db_store_verify.cc)
  class Verifier;
  // Reads every layer of one snapshot through the layer reader (nothing
  // quarantined) after the codec check of its head. OK, or Corruption with
  // the damaged layer in *layer (NotFound: erased or replaced while read).
  // Counts into `report` when given.
  Status VerifySnapshot(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                        std::optional<uint32_t>* layer, VerifyReport* report);

  Status RemoveCorrupt(const VerifyReport& report, RepairReport* out,
                       std::vector<std::string>* left_alone);
  // ---- repair of damaged files and derived metadata (db_store_rebuild.cc)
  // Live SST files whose blocks fail their checksums, by column family.
  Result<std::map<int, std::set<std::string>>> DamagedFiles();
  // Rewrites column family `cf` with its intact entries, without its files.
  Status RewriteFamily(int cf, const std::set<std::string>& damaged, RepairReport* out);
  bool KeepEntry(int cf, const rocksdb::Slice& key, const rocksdb::Slice& value);
  Status DropFamilyFiles(int cf, std::vector<rocksdb::LiveFileMetaData> before,
                         const std::set<std::string>& damaged, bool auto_off);
  std::set<std::string> SnapshotsNamedElsewhere();
  // The run records, refs and page entries the manifests need, where missing.
  Status RebuildDerived(RepairReport* out, bool* changed);
  Result<RunRecord> RebuildRunRecord(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                                     const std::map<uint32_t, Prefix>& chain_of_page);

  // ---- maintenance (db_store_maintenance.cc)
  void MaintenanceLoop();
  void LoadIndex();
  void WaitForIndex();
  Status MaintenancePass() {
    return MaintenancePass(options_.ttl_seconds, options_.capacity_bytes);
  }
  Status MaintenancePass(uint64_t ttl_seconds, uint64_t capacity_bytes);
  // Compact's orphan pass: records of puts with no run record, run records
  // nobody refs, refs of snapshots that are gone, page entries of puts that
  // are gone.
  Status RemoveOrphans(CompactReport* report);
  Status RemoveOrphanRecords(CompactReport* report);
  Status FindStrayRecords(NamespaceId ns, PutId put, const RunRecord& rec,
                          std::vector<std::string>* strays);
  Status PersistRecency();
  Status SweepIntents();

  // Serializes writers of the same snapshot key (puts, erases, sweeps).
  class KeyLock;
  std::mutex inflight_mu_;
  std::condition_variable inflight_cv_;
  std::set<std::string> inflight_;

  const Options options_;
  const std::string path_;
  WriterLock lock_;                // a writer's, held until after db_ is closed
  bool had_store_marker_ = false;  // AUXSTORE-LOCK or the watermark before this open
  RocksSetup setup_;
  std::unique_ptr<rocksdb::Env> capped_env_;   // SkipBrokenManifestTail's; outlives db_
  std::unique_ptr<rocksdb::Env> current_env_;  // ReadThroughOlderManifest's; outlives db_
  std::unique_ptr<rocksdb::DB> db_;
  bool db_read_only_ = false;              // db_ came from OpenForReadOnly
  std::unique_ptr<DirectRecords> direct_;  // over db_, reset before it closes
  std::shared_ptr<TableDeletions> table_deletions_ = std::make_shared<TableDeletions>();
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

  // The paged data model: run records, page index, refs and pins.
  RocksPageLedger ledger_{db_, cf_, MakeLedgerHost()};
  std::mutex put_id_mu_;
  PutId next_put_id_ = 0;  // from std::random_device on first use
  bool put_id_seeded_ = false;
  std::atomic<uint64_t> hits_{0}, misses_{0}, puts_{0}, duplicate_puts_{0}, evictions_{0},
      expirations_{0}, orphans_seen_{0}, orphans_removed_{0}, bytes_written_{0}, bytes_read_{0},
      reads_repeated_{0}, lane_reads_{0};
  std::function<void()> after_manifest_read_;  // SetAfterManifestReadForTest

  // ReadLayersInto's lanes (Options::read_lanes resolved).
  const size_t read_lanes_;
  // ReadLayer's read-ahead: pieces are fetched here while the caller's
  // thread verifies and delivers the ones before (as many threads as
  // lanes, at least 2).
  boost::asio::thread_pool read_pool_;
  // The store's own work (Options::work_threads): the second SST writer of
  // a big put (RunBeside, store/run_beside.h). Shareable by any work that
  // never waits on a pool thread coming free.
  boost::asio::thread_pool work_pool_;
  // ReadLayersInto's lanes beside the caller's (read_lanes_ - 1 threads;
  // none with one lane). A lane waits only on read_pool_, never on this
  // pool: no lane can wait for a thread of its own pool.
  std::optional<boost::asio::thread_pool> lane_pool_;

  // One TTL/LRU pass at a time: a caller's RunMaintenance waits for a
  // background pass in flight, so it returns with every eviction counted.
  std::mutex pass_mu_;
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
