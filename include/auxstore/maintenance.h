// Verification, repair and compaction of a store: library calls the
// `auxstore` CLI only prints (as RocksDB's VerifyChecksum is for ldb).
//
// Verification reads every stored byte once: each put's records (a record is
// good when its envelope decodes under its own key, its record kind is the
// layer's and its size the stream's) against the page and tail hashes its
// run record keeps; then each manifest against the puts it names (every run
// pinned by the same page hashes, every page and tail it uses undamaged, its
// headers passing the codec check against the namespace geometry). A
// snapshot is reported corrupt only when bytes it reads are damaged; damage
// RocksDB finds that no snapshot reads (a filter block, pages nobody uses,
// an orphan's records) is a store problem, never a snapshot removed. Repair
// reads each reported snapshot back whole (as a restore does, to its XXH3)
// before removing it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore {

struct CorruptSnapshot {
  NamespaceId ns = 0;
  Prefix prefix;
  std::optional<uint32_t> layer;  // when the damage is in one layer
  std::string why;
};

struct VerifyReport {
  uint64_t namespaces = 0;
  uint64_t snapshots_checked = 0;
  uint64_t snapshots_ok = 0;
  uint64_t bytes_checked = 0;  // stored payload bytes read and verified (each page once)
  uint64_t records_checked = 0;
  uint64_t puts_checked = 0;   // run records and their records
  uint64_t pages_checked = 0;  // pages of every array, each once
  uint64_t shared_pages = 0;   // pages more than one snapshot uses
  // What no snapshot uses: records of a put that crashed before its commit
  // (or whose reclaim a crash cut short), run records nobody refs. Not
  // corruption; Compact removes them.
  uint64_t orphan_puts = 0;
  uint64_t orphan_records = 0;  // their records, and records a run record does not name
  uint64_t orphan_bytes = 0;
  // Refs of snapshots that are gone and page entries of puts that are gone
  // (they keep space or miss shares, never lose data); Compact removes them.
  uint64_t stale_entries = 0;
  uint64_t commit_seq = 0;
  std::optional<uint64_t> watermark;
  // The open found `lost_commits` fewer commits than the watermark vouched
  // for (a truncated WAL or MANIFEST), and went on with what is left.
  bool watermark_lost = false;
  uint64_t lost_commits = 0;
  // Damage not in any one snapshot: files, namespace records, meta, watermark.
  std::vector<std::string> store_problems;
  std::vector<CorruptSnapshot> corrupt;  // one entry per damaged snapshot

  bool clean() const { return !watermark_lost && store_problems.empty() && corrupt.empty(); }
};

struct VerifyProgress {
  uint64_t bytes_done = 0, bytes_total = 0;
  uint64_t snapshots_done = 0, snapshots_total = 0;
};

struct VerifyOptions {
  // RocksDB's own checks over every live file (block checksums, XXH3 file
  // checksums) before the snapshots are read.
  bool check_files = true;
  // Called from the verifying thread after each snapshot.
  std::function<void(const VerifyProgress&)> progress;
};

struct RepairReport {
  std::vector<CorruptSnapshot> removed;   // quarantined, records deleted
  std::vector<std::string> not_repaired;  // store problems repair leaves alone
  bool accepted_data_loss = false;        // opened despite lost commits; watermark reset
  // The store could not be opened because live table files could not be:
  // each was set aside in <store>/auxstore-damaged/ (kept for the operator
  // to delete) and its column family rewritten from what still reads. One
  // line per file (what was read of it, where it is kept) and per family.
  std::vector<std::string> tables_set_aside;
};

struct CompactOptions {
  uint64_t ttl_seconds = 0;          // 0 = keep regardless of age
  uint64_t max_bytes = 0;            // 0 = no budget (least recently used go first)
  std::vector<NamespaceId> keep_ns;  // non-empty: drop every other namespace
  std::vector<NamespaceId> drop_ns;
  // Lay each chain's pages out in the order its longest snapshot reads them
  // (docs/format.md, "Re-layout"): a snapshot that reads its pages from two
  // or more earlier puts is stored again, once, as one stream (the longest
  // of a chain whole; each shorter one then reads its pages from that
  // stream, its own put keeping only its tail rows), and the puts nobody
  // reads any more are reclaimed. Each snapshot moves in one commit; a
  // leased one is left as it is. Holds one snapshot's bytes in memory.
  bool relayout = true;
};

struct CompactReport {
  uint64_t snapshots_before = 0, snapshots_after = 0;
  uint64_t payload_bytes_before = 0, payload_bytes_after = 0;
  uint64_t disk_bytes_before = 0, disk_bytes_after = 0;  // the store directory
  uint64_t dropped_by_namespace = 0, expired = 0, evicted = 0;
  uint64_t orphan_puts_removed = 0, orphan_records_removed = 0, stale_entries_removed = 0;
  // The re-layout: snapshots stored again, the bytes their new puts wrote,
  // and snapshots it left as they were because a lease, a concurrent change
  // or a failed read stopped it (the read quarantines what it finds damaged).
  uint64_t relaid_snapshots = 0, relaid_bytes = 0, relayout_skipped = 0;

  uint64_t disk_bytes_freed() const {
    return disk_bytes_before > disk_bytes_after ? disk_bytes_before - disk_bytes_after : 0;
  }
};

// Opens `path` read-only (beside a live writer) and verifies it. A store
// the open refuses as damaged is a report with that store problem; other
// open failures (not a store, busy, I/O) are returned as errors.
Result<VerifyReport> VerifyStoreAt(const std::string& path, const VerifyOptions& options = {});

// Opens `path` for writing (Busy while another handle writes), verifies it
// and removes exactly the snapshots found corrupt. When the open is refused
// because live table files cannot be opened (a damaged footer, index,
// metaindex or properties block), those files are set aside and their
// column families rewritten around them first (tables_set_aside). Lost
// commits make the store unopenable: refused unless `accept_data_loss`
// (then the watermark comes down to what is left). `report` receives the
// verification.
Result<RepairReport> RepairStoreAt(const std::string& path, bool accept_data_loss,
                                   VerifyReport* report, const VerifyOptions& options = {});

// Opens `path` for writing and compacts it (Store::Compact).
Result<CompactReport> CompactStoreAt(const std::string& path, const CompactOptions& options);

struct MigrateReport {
  uint64_t from_version = 0, to_version = 0;
  bool already_current = false;  // nothing to do (a finished migration is finished)
  uint64_t namespaces = 0, snapshots = 0, bytes = 0;
  // Snapshots of the old store that did not read back intact (a record
  // missing or damaged, a blob whose XXH3 is not its manifest's): not
  // carried over; the old store keeps them.
  std::vector<CorruptSnapshot> skipped;
  std::string backup;  // where the old store is kept: PATH.v1
};

// Converts a store of format version 1 (auxstore before paged storage) to
// this build's version, offline (the old store's writer must be gone:
// Busy otherwise). The new store is built beside it in PATH.migrate-tmp
// from every snapshot that reads back intact (creation times and token
// digests kept; layers stored whole), closed (synced), then swapped in
// with one atomic rename (RENAME_EXCHANGE) and the old store kept at
// PATH.v1. Crash-safe: killed at any point, PATH is the old store intact
// or the new one complete, and running it again finishes the job (a
// PATH.migrate-tmp beside a version-1 PATH is a partial new store and is
// rebuilt; beside a migrated PATH it is the old store and becomes PATH.v1).
// A PATH.v1 that already exists is refused (nothing is overwritten).
Result<MigrateReport> MigrateStoreAt(const std::string& path);

}  // namespace auxstore
