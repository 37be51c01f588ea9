// Store: the persistent tier. Snapshots of per-layer aux state in RocksDB,
// keyed by (namespace, prefix, layer, chunk), checksummed end to end.
//
// Visibility: a snapshot is visible only once its manifest is committed, and
// the manifest is committed only after every record it names. A reader never
// sees part of a snapshot.
//
// Durability, when PutSnapshot returns OK:
//   kSync  — the snapshot survives power loss (records fsynced, manifest
//            committed through a synced WAL write, durable watermark advanced).
//   kAsync — the snapshot survives a crash of this process (everything is in
//            the OS); a power loss may lose it, never tear it. Flush() makes
//            every earlier async snapshot durable as if it were kSync.
//
// Thread safety: every method may be called from any number of threads.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/blob_hash.h"
#include "auxstore/geometry.h"
#include "auxstore/layer_reader.h"
#include "auxstore/log.h"
#include "auxstore/maintenance.h"
#include "auxstore/manifest_types.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore {

enum class Durability : uint8_t { kSync = 0, kAsync = 1 };

// Threads a read of many bytes takes by default: one per two cores, 2 to 8
// (std::thread::hardware_concurrency). The store's reads into caller memory
// (Options::read_lanes) and the GPU pipeline's restore lanes and I/O
// threads (gpu_pipeline.h) take this many. On a 16-core GPU host, warm
// restores ran 1.5-2.8x as fast with 8 lanes as with 2 (3.6-4.5 GB/s
// against 5.3-11.3 over two machines; bench/RESULTS.md, "GPU"); a 2-core
// host keeps 2.
size_t DefaultRestoreLanes(unsigned cores = std::thread::hardware_concurrency());

// When a put on a store with a shared tier (Options::shared) returns
// (docs/shared-tier.md): kThrough — after the local commit AND RADOS
// acknowledged the snapshot's pages and its manifest; kBehind — after the
// local commit, the upload queued (bounded by shared_queue_bytes) and
// written by a background thread, retried while it fails.
enum class SharedWrite : uint8_t { kThrough = 0, kBehind = 1 };

struct Options {
  Durability durability = Durability::kSync;
  // Layer blobs are cut into records of this many payload bytes.
  uint32_t chunk_bytes = 4u << 20;
  // Byte budget for the bytes stored (each shared page counted once);
  // least-recently-used snapshots are evicted in the background when it is
  // exceeded, and a page goes only with the last snapshot using it.
  // 0 = unlimited.
  uint64_t capacity_bytes = 0;
  // Snapshots older than this (since creation) are expired. 0 = never.
  uint64_t ttl_seconds = 0;
  // Open without taking the writer's lock; every mutating call returns
  // Unavailable. Works while another process has the store open for writing.
  bool read_only = false;
  bool create_if_missing = true;
  // Snapshots with at least this many payload bytes are written as one SST
  // file and ingested; smaller ones go through the WAL in one batch.
  uint64_t ingest_threshold_bytes = 1u << 20;
  // Open even when the durable watermark shows committed snapshots were lost
  // (the loss is still reported in Stats::lost_commits_at_open).
  bool accept_data_loss = false;
  // Background work (eviction, TTL, orphan sweep, recency persistence). The
  // snapshot index always loads in the background after open.
  bool background_maintenance = true;
  // Threads of the store's own Asio pool, where the second SST file of a
  // big put (two halves of 64 MiB or more) is written beside the first. A
  // put never waits for one of them to come free (it writes both halves
  // itself when none is), so any number > 0 is safe; 0 is InvalidArgument.
  uint32_t work_threads = 2;
  // Lanes of one ReadLayersInto (and of each snapshot of a
  // ReadSnapshotsInto): when the layers asked for, besides the largest,
  // hold a mebibyte or more, they are copied by this many threads at once,
  // the caller's one of them, each with the store's read-ahead of its
  // multi-MiB chunks. The store keeps read_lanes - 1 lane threads and a
  // read pool of read_lanes (at least 2). 0: DefaultRestoreLanes(), one per
  // two cores from 2 to 8; 1: one layer after another, no lane thread. At
  // most kMaxReadLanes.
  uint32_t read_lanes = 0;
  static constexpr uint32_t kMaxReadLanes = 64;
  // Where the store's warnings and RocksDB's info log go (log.h): records at
  // `log_level` and above. Empty: stderr, each distinct message once. The
  // store writes no log file.
  LogSink log_sink;
  LogLevel log_level = LogLevel::kWarn;
  // The shared tier: a rados://POOL?conf=PATH&namespace=NS... URI
  // (docs/shared-tier.md). Empty: the embedded store alone, as before. Set:
  // the directory is the local store in front, the pool the tier every
  // process and node that names it shares: puts go to both (shared_write),
  // lookups that miss locally ask the pool and restore what it holds.
  std::string shared;
  SharedWrite shared_write = SharedWrite::kThrough;
  // kBehind: bytes of snapshots queued for upload at most. When full, a put
  // waits for room (shared_shed_when_full false) or queues nothing and
  // counts the snapshot in StoreStats::shared_shed (true).
  uint64_t shared_queue_bytes = 256ull << 20;
  bool shared_shed_when_full = false;
  // Whether what this store reads from the pool is also written into its
  // local directory (behind the call, as a put of the same snapshot), so
  // that the next read of it is local. false: nothing read from the pool is
  // kept by the calls that do not need it: LongestPrefix and
  // CountLeadingStored answer from the pool's records, no page read;
  // ReadLayerInto, ReadLayersInto, ReadSnapshotsInto, GetLayer and
  // ReadLayer read the pool's pages, checked, each time (the reads into
  // memory straight into the caller's buffers: one copy). The calls that
  // work on a local copy still write one: GetManifest(s) (and so the
  // restore pipeline, which opens its layers after it), ReadLayerRows,
  // AcquireLease, FindLongestPrefix, LongestPrefixForTokens and
  // LookupAndLease. A kThrough put writes the pool alone: the same checks
  // and errors as a local put, its manifest planned from the layers, the
  // pages and the record committed before it returns, nothing written
  // into the directory (pool unreachable: Unavailable, nothing stored
  // anywhere); a kBehind put still commits locally first (its queue's
  // copy). For a process whose local disk is not worth the copies (a
  // worker reading what another process looked up, a node with no disk
  // to spare).
  bool shared_local_copies = true;
};

// One layer of a snapshot to write.
struct LayerBlob {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  ByteSpan bytes;
};

struct PutOptions {
  // When set, stored in the manifest and checked by lookups that pass tokens.
  std::optional<TokenDigest> token_digest;
  // The chained prefix hashes of the snapshot's tokens, one per complete
  // block of `block_size` tokens (PrefixHashes gives them, or the engine's
  // own chain). With a chain, the rows of QSA and DSA layers are stored in
  // pages (NamespaceSpec::page_tokens rows; the block size when 0) shared
  // with every other snapshot of the same namespace and chain: only pages
  // not stored yet are written. Without one, each layer is stored whole.
  std::span<const Prefix> block_chain;
  uint32_t block_size = 0;
  // The creation time to store (unix ms) instead of now: `import` and
  // `migrate` keep the original's, so TTL expiry counts from it.
  std::optional<int64_t> created_unix_ms;
};

// InvalidArgument unless a chain of `blocks` blocks of `block_size` tokens
// fits a snapshot of `token_count` tokens (no chain always fits): the
// check PutSnapshot and a write-behind snapshot make before anything else.
Status CheckBlockChain(size_t blocks, uint32_t block_size, uint64_t token_count);

struct StoreStats {
  uint64_t snapshots = 0;      // visible snapshots
  uint64_t payload_bytes = 0;  // their layer bytes, shared pages counted once per snapshot
  uint64_t unique_bytes = 0;   // the bytes stored for them, each shared page once (the budget)
  uint64_t hits = 0;           // LongestPrefix/GetManifest that found a snapshot
  uint64_t misses = 0;
  uint64_t puts = 0;            // snapshots written by this handle
  uint64_t duplicate_puts = 0;  // puts of a prefix already present (no-ops)
  uint64_t evictions = 0;       // LRU evictions by this handle
  uint64_t expirations = 0;     // TTL expirations by this handle
  uint64_t quarantines = 0;     // snapshots quarantined for corruption (persisted)
  uint64_t orphans_seen = 0;    // record groups without a manifest found by sweeps
  uint64_t orphans_removed = 0;
  uint64_t commit_seq = 0;  // commits recovered + made since creation
  uint64_t durable_watermark = 0;
  uint64_t lost_commits_at_open = 0;  // watermark - recovered, when accept_data_loss
  uint64_t bytes_written = 0;         // layer bytes of the puts made by this handle
  uint64_t bytes_read = 0;            // layer bytes read and verified by this handle,
                                      // headers included (whole blobs)
  uint64_t reads_repeated = 0;        // repeats of reads into caller memory that met their
                                      // snapshot replaced (a put, Compact's re-layout), one each
  uint64_t capacity_bytes = 0;        // Options::capacity_bytes (0: unlimited)
  uint64_t leases = 0;                // live leases
  bool index_ready = false;           // the background LRU index has loaded
  bool fenced = false;                // a write failed; reopen to write again
  // The shared tier (Options::shared; all 0 without one), by this handle:
  bool shared = false;                  // the store has a shared tier
  uint64_t shared_uploads = 0;          // snapshots committed to the pool (or found there)
  uint64_t shared_pages_stored = 0;     // page objects created in the pool
  uint64_t shared_pages_present = 0;    // pages the pool held already (stored nothing)
  uint64_t shared_upload_failures = 0;  // upload attempts that failed (retried while queued)
  uint64_t shared_shed = 0;             // kBehind snapshots not uploaded: the queue was full
  uint64_t shared_queued = 0;           // kBehind snapshots waiting for upload now
  uint64_t shared_restores = 0;         // snapshots restored from the pool into the local store
  uint64_t shared_corruptions = 0;      // pool objects found damaged (their snapshots quarantined)
};

// A lease pins a snapshot against eviction, TTL expiry and compaction
// between a lookup and the restore that uses it. Leases live in the handle
// that made them (they are not persisted) and expire on their own, so a lease
// never released does not hold capacity forever. An explicit Erase still
// removes a leased snapshot (an operator's removal always wins). 0: none.
using LeaseId = uint64_t;
inline constexpr uint64_t kDefaultLeaseMs = 30'000;

struct LookupOptions {
  bool lease = false;  // lease the snapshot found
  uint64_t lease_ms = kDefaultLeaseMs;
};

// A snapshot as listed: its key and manifest.
struct SnapshotInfo {
  NamespaceId ns = 0;
  Prefix prefix;
  Manifest manifest;
};

// Receives a layer chunk by chunk, in order. `offset` is the chunk's byte
// offset in the blob. The bytes are valid only during the call. Returning a
// non-OK Status stops the read and is returned by ReadLayer.
using ChunkSink = std::function<Status(uint64_t offset, ByteSpan chunk)>;

class Store {
 public:
  // Creates (0700, files 0600) or opens the store at `path`.
  static Result<std::unique_ptr<Store>> Open(const Options& options, const std::string& path);

  virtual ~Store() = default;
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Registers a namespace (idempotent) and returns its id, the fingerprint of
  // `spec`. Durable when it returns.
  virtual Result<NamespaceId> RegisterNamespace(const NamespaceSpec& spec) = 0;
  virtual Result<NamespaceSpec> GetNamespace(NamespaceId ns) = 0;
  virtual Result<std::vector<std::pair<NamespaceId, NamespaceSpec>>> ListNamespaces() = 0;

  // Writes a snapshot. Every layer is validated against the namespace's
  // geometry first; any invalid layer fails the call and nothing is written.
  // Layer indices must be unique. A prefix already present: OK, no write.
  virtual Status PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                             std::span<const LayerBlob> layers, const PutOptions& put = {}) = 0;

  // One snapshot of PutSnapshots: what PutSnapshot takes, and (set by the
  // call) what came of it.
  struct SnapshotPut {
    NamespaceId ns = 0;
    Prefix prefix;
    uint64_t token_count = 0;
    std::span<const LayerBlob> layers;
    PutOptions options;
    Status status;  // out
  };
  // Puts several snapshots (of any namespaces), each exactly as PutSnapshot
  // puts it (the same checks and errors, the same durability once the call
  // returns), in order, each one's outcome in its `status`: one refused or
  // failed never stops the others. A batch of a connector's pages. On a
  // store with Options::shared and kThrough the pages of every snapshot go
  // to the pool in one window (no drain between snapshots; a buffer that
  // several of them name sent once), and each record is committed after
  // its own pages (and its local commit); a window the pool did not answer
  // fails each snapshot that sent pages with Unavailable, as each put alone
  // would have failed. Returns the first error (OK when every snapshot was
  // put).
  virtual Status PutSnapshots(std::span<SnapshotPut> puts);

  virtual Result<Manifest> GetManifest(NamespaceId ns, const Prefix& prefix) = 0;

  // Streams one layer. Every chunk's envelope checksum and the whole-blob
  // hash are verified; on a mismatch the call returns Corruption, the
  // snapshot is quarantined and the sink is never given unverified bytes.
  // (The final chunk is delivered only after the whole-blob hash checks.)
  // A snapshot erased or replaced while it is streamed (a put of its
  // prefix, Compact moving its pages) ends the read with NotFound: the sink
  // cannot take back what it was given. Nothing is quarantined.
  virtual Status ReadLayer(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                           const ChunkSink& sink) = 0;

  // The whole layer in memory (ReadLayer into a vector). A snapshot
  // replaced while read is read again under its new manifest, as
  // ReadLayerInto does.
  virtual Result<std::vector<uint8_t>> GetLayer(NamespaceId ns, const Prefix& prefix,
                                                uint32_t layer) = 0;

  // A cursor over one layer of `manifest` (the snapshot's, as GetManifest
  // returned it): its pieces read in order into the caller's buffers, each
  // verified while copied, the layer digest checked before the last one,
  // damage quarantined (layer_reader.h). For pipelines that stage pieces
  // themselves (pipeline/). NotFound when the manifest has no such layer;
  // Corruption (quarantined) when a layer that is only a header fails its
  // digest. Nothing is touched (no hit, no LRU). The reader must not
  // outlive the store. `checks`: kLayerDigest for callers that use no
  // piece until the last one returned OK (one hash pass instead of two;
  // layer_reader.h).
  virtual Result<std::unique_ptr<LayerReader>> OpenLayer(
      NamespaceId ns, const Prefix& prefix, const Manifest& manifest, uint32_t layer,
      PieceChecks checks = PieceChecks::kEachRecord) = 0;

  // Removes the snapshot's manifest (so lookups miss) and counts a
  // quarantine. Returns `why` when it did; OK when there was nothing to do.
  virtual Status Quarantine(NamespaceId ns, const Prefix& prefix, const Status& why) = 0;
  // The same, only if the stored manifest is still `seen` — the one the
  // caller read. If it was erased or replaced meanwhile, the caller raced a
  // writer (no damage): nothing is removed and NotFound is returned.
  virtual Status QuarantineIfUnchanged(NamespaceId ns, const Prefix& prefix, const Manifest& seen,
                                       const Status& why) = 0;

  // Index of the longest candidate present (candidates ordered shortest to
  // longest), or nullopt. One MultiGet.
  virtual Result<std::optional<size_t>> LongestPrefix(NamespaceId ns,
                                                      std::span<const Prefix> candidates) = 0;

  // LongestPrefix that can also lease what it found (one step: nothing can
  // evict it in between).
  struct PrefixMatch {
    size_t index = 0;   // into the candidates
    LeaseId lease = 0;  // when options.lease
  };
  virtual Result<std::optional<PrefixMatch>> FindLongestPrefix(NamespaceId ns,
                                                               std::span<const Prefix> candidates,
                                                               const LookupOptions& options) = 0;

  struct TokenMatch {
    Prefix prefix;
    uint64_t tokens = 0;  // tokens covered by the matched prefix
    LeaseId lease = 0;    // when options.lease
  };
  // LongestPrefix over every block boundary of `tokens` (PrefixHashes), with
  // the manifest's token digest checked when it has one.
  virtual Result<std::optional<TokenMatch>> LongestPrefixForTokens(
      NamespaceId ns, std::span<const uint32_t> tokens, uint32_t block_size, uint64_t salt,
      const LookupOptions& options = {}) = 0;

  // Leases the snapshot of (ns, prefix) for `lease_ms` (NotFound if none).
  virtual Result<LeaseId> AcquireLease(NamespaceId ns, const Prefix& prefix,
                                       uint64_t lease_ms = kDefaultLeaseMs) = 0;
  // Ends a lease early. NotFound when it is unknown or has expired.
  virtual Status ReleaseLease(LeaseId lease) = 0;

  // Manifests of many prefixes in one MultiGet: the manifest of each one
  // stored, nullopt for each one not. Nothing is touched (no hit, no LRU).
  virtual Result<std::vector<std::optional<Manifest>>> GetManifests(
      NamespaceId ns, std::span<const Prefix> prefixes) = 0;

  // Reads one whole layer into `dst` (at least the layer's size), verified,
  // with no intermediate buffer: each chunk is copied once, from RocksDB's
  // block into `dst`, in the pass that feeds the layer digest (every record
  // header checked on the way). Each record's own checksum is checked only
  // when the digest differs, to name and quarantine the damaged record: one
  // hash pass per byte. Chunks of a mebibyte and more are read ahead (two,
  // on the store's read threads) while the one before is hashed and copied.
  // Returns the layer's size. OutOfRange (nothing written) when `dst` is too
  // small. On Corruption the snapshot is quarantined and `dst` holds partial
  // bytes that must not be used.
  // A snapshot replaced while read (a put of its prefix, or Compact moving
  // its pages to a new stream) is read again under its new manifest, up to
  // three more times (StoreStats::reads_repeated); erased while read, or
  // replaced more often than that: NotFound, nothing quarantined.
  virtual Result<uint64_t> ReadLayerInto(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                         std::span<uint8_t> dst) = 0;

  // One layer of ReadLayersInto: where it goes, and (set by the call) what
  // came of it.
  struct LayerInto {
    uint32_t layer = 0;
    std::span<uint8_t> dst;
    Status status;       // out
    uint64_t bytes = 0;  // out: the layer's size, when `status` is OK
  };
  // Reads several layers of one snapshot, each exactly as ReadLayerInto
  // reads it (same checks, same quarantine), with the manifest read once
  // for all of them and, in DbStore, one iterator per owner put across
  // their records: the call for many small layers (a connector's pages).
  // In DbStore layers holding a mebibyte or more besides the largest are
  // copied by Options::read_lanes threads at once (the layers' `dst` must
  // not overlap), and otherwise the next layer's first chunk, when it is a
  // mebibyte or more, is read while a layer is copied. Each layer's outcome
  // is in its `status`; returns the first error, OK when every layer was
  // read. A layer's own error (not in the snapshot, `dst` too small) fails
  // that layer only. Once the snapshot is gone (NotFound: missing, or
  // erased while read) or found damaged (Corruption, quarantined) at a
  // layer, the layers after it in `layers` fail with that error (lanes may
  // have written their `dst` meanwhile: those bytes are not a result). A
  // snapshot replaced while read is read again whole under its new manifest
  // (as ReadLayerInto), so every layer comes from one version.
  virtual Status ReadLayersInto(NamespaceId ns, const Prefix& prefix, std::span<LayerInto> layers);

  // Layers of several snapshots (of any namespaces), each snapshot's
  // exactly as ReadLayersInto reads them (same outcomes, same quarantine),
  // with all their manifests looked up in one batch: the call for a
  // connector's many small pages. Each layer's outcome is in its `status`.
  struct SnapshotInto {
    NamespaceId ns = 0;
    Prefix prefix;
    std::span<LayerInto> layers;
  };
  virtual void ReadSnapshotsInto(std::span<SnapshotInto> snapshots);

  // Removes a snapshot: manifest first (durably, as a commit the watermark
  // vouches for), then its records. A prefix not stored: OK, nothing changes.
  virtual Status Erase(NamespaceId ns, const Prefix& prefix) = 0;

  // Visits every visible snapshot (optionally one namespace) in key order.
  // A store with Options::shared visits the pool's snapshots too, each
  // snapshot once; when the pool does not answer it visits the local ones
  // and returns Unavailable.
  virtual Status List(std::optional<NamespaceId> ns,
                      const std::function<bool(const SnapshotInfo&)>& visit) = 0;

  virtual StoreStats Stats() = 0;

  // Makes every snapshot accepted so far durable (as kSync) and persists recency.
  virtual Status Flush() = 0;

  // Runs one maintenance pass now (TTL, LRU down to budget, orphan sweep).
  virtual Status RunMaintenance() = 0;

  // ---- verification, repair, compaction (maintenance.h) -------------------
  // Reads and checks every snapshot, namespace and (check_files) RocksDB
  // file of the state this handle sees. Changes nothing; works read-only.
  virtual Result<VerifyReport> Verify(const VerifyOptions& options = {}) = 0;
  // Removes the snapshots `report` names corrupt, each only after reading
  // it again and seeing it still fail (a report may be stale): quarantined
  // (manifest removed, counted), then its records deleted.
  virtual Result<RepairReport> Repair(const VerifyReport& report) = 0;
  // Drops what `options` does not want, orphan records, then compacts every
  // column family so erased bytes leave the disk.
  virtual Result<CompactReport> Compact(const CompactOptions& options) = 0;
  // Bytes of every file in the store directory.
  virtual uint64_t DiskBytes() = 0;

  // ---- the connector's batched calls (issue 24; docs/connectors.md) -------
  // How many LEADING `prefixes` are stored: the consecutive-hit count from
  // index 0 (SGLang's batch_exists, LMCache's batched_contains). The first
  // prefix is looked up alone and the rest in one MultiGet, so a first-key
  // miss costs one lookup. A damaged manifest is a miss (and quarantined).
  // Counts no hit, changes no recency.
  virtual Result<size_t> CountLeadingStored(NamespaceId ns, std::span<const Prefix> prefixes);

  // The stored pages of a block chain: the rows of QSA/DSA layers that
  // paged puts (PutOptions::block_chain) of namespace `ns` keep, by whichever
  // snapshot stored them.
  struct ChainPages {
    size_t pages = 0;          // LEADING pages of the chain stored
    uint32_t page_tokens = 0;  // tokens per page (the namespace's, else block_size)
  };
  // How many LEADING pages of `block_chain` (chained hashes of blocks of
  // `block_size` tokens, as PrefixHashes gives them) are stored, in one
  // MultiGet of the page index after the first page's lookup: page p (tokens
  // [p * page_tokens, (p + 1) * page_tokens)) is stored when the index names
  // it under the chain hash at its end. InvalidArgument for block_size 0 or a
  // page size that is not a multiple of it; NotFound for an unknown
  // namespace. A Store that keeps no page index: NotSupported.
  virtual Result<ChainPages> CountLeadingPages(NamespaceId ns, std::span<const Prefix> block_chain,
                                               uint32_t block_size);

  // Looks up `prefixes` and leases each one stored, in one MultiGet (the
  // leases are taken under each key's lock first, then the lookup decides
  // which to keep, so nothing is evicted in between). Release each lease with
  // ReleaseLease; each found snapshot counts a hit and is touched (it is
  // about to be read).
  struct BatchLeases {
    std::vector<LeaseId> leases;  // leases[i]: prefixes[i]'s lease; 0 when not stored
    size_t leading = 0;           // how many LEADING prefixes are stored (and leased)
  };
  virtual Result<BatchLeases> LookupAndLease(NamespaceId ns, std::span<const Prefix> prefixes,
                                             uint64_t lease_ms = kDefaultLeaseMs);

  // Row ranges (store/store_rows.cc): rows [first_row, last_row) of every
  // array of a QSA or DSA layer (QSA: raw keys; DSA: k_normed, gate, valid),
  // straight into `dst`: array a's rows land after the earlier arrays'
  // (last_row - first_row) rows, each array's rows contiguous, so an engine
  // that already holds rows [0, first_row) on its device fetches only the
  // rest, and a connector keyed by page reads one page (rows [p * P, (p +
  // 1) * P)). Here the whole layer is read and verified (every record, and
  // the layer digest, as ReadLayerInto does); DbStore reads a paged layer's
  // records holding the rows only, each verified on its own (its envelope
  // and XXH3-64: the layer digest needs every page), so damage outside the
  // range does not fail it (store/store_rows_paged.cc). Only the wanted rows
  // are copied, once, from RocksDB's block into `dst`.
  struct LayerRows {
    uint64_t bytes = 0;  // bytes written to dst
    uint64_t rows = 0;   // the layer's rows in all (QSA ingested, DSA len)
  };
  // InvalidArgument for an opaque layer (no rows: read it whole);
  // OutOfRange (nothing read) for first_row > last_row, last_row past the
  // layer's rows, or a `dst` too small; NotFound for no such snapshot or
  // layer. On Corruption the snapshot is quarantined and `dst` holds partial
  // bytes that must not be used. A snapshot replaced while read is read
  // again under its new manifest, as ReadLayerInto does.
  virtual Result<LayerRows> ReadLayerRows(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                          uint64_t first_row, uint64_t last_row,
                                          std::span<uint8_t> dst);

 protected:
  Store() = default;
};

}  // namespace auxstore
