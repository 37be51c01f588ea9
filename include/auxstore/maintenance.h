// Verification, repair and compaction of a store: library calls the
// `auxstore` CLI only prints (as RocksDB's VerifyChecksum is for ldb).
//
// Verification uses the same checks as every read and restore (a chunk is
// good when its envelope decodes under its own key, its record kind is the
// layer's, its size is the manifest's; a layer when its chunks are, in
// order, its head passes the codec check against the namespace geometry, and
// its bytes hash to the manifest's XXH3). A snapshot is reported corrupt only
// when one of its own records fails them; damage RocksDB finds that no
// snapshot's records show (a filter block, an orphan's records) is a store
// problem, never a snapshot removed.
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
  uint64_t bytes_checked = 0;  // layer payload bytes read and verified
  uint64_t records_checked = 0;
  // Records no manifest names: left by a put that crashed before its commit,
  // or an erase after it removed the manifest. Not corruption; Compact
  // removes them.
  uint64_t orphan_snapshots = 0;  // prefixes with records but no manifest
  uint64_t orphan_records = 0;    // their records, and records a manifest does not name
  uint64_t orphan_bytes = 0;
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
};

struct CompactOptions {
  uint64_t ttl_seconds = 0;          // 0 = keep regardless of age
  uint64_t max_bytes = 0;            // 0 = no budget (least recently used go first)
  std::vector<NamespaceId> keep_ns;  // non-empty: drop every other namespace
  std::vector<NamespaceId> drop_ns;
};

struct CompactReport {
  uint64_t snapshots_before = 0, snapshots_after = 0;
  uint64_t payload_bytes_before = 0, payload_bytes_after = 0;
  uint64_t disk_bytes_before = 0, disk_bytes_after = 0;  // the store directory
  uint64_t dropped_by_namespace = 0, expired = 0, evicted = 0;
  uint64_t orphan_snapshots_removed = 0, orphan_records_removed = 0;

  uint64_t disk_bytes_freed() const {
    return disk_bytes_before > disk_bytes_after ? disk_bytes_before - disk_bytes_after : 0;
  }
};

// Opens `path` read-only (beside a live writer) and verifies it. A store
// the open refuses as damaged is a report with that store problem; other
// open failures (not a store, busy, I/O) are returned as errors.
Result<VerifyReport> VerifyStoreAt(const std::string& path, const VerifyOptions& options = {});

// Opens `path` for writing (Busy while another handle writes), verifies it
// and removes exactly the snapshots found corrupt. Lost commits make the
// store unopenable: refused unless `accept_data_loss` (then the watermark
// comes down to what is left). `report` receives the verification.
Result<RepairReport> RepairStoreAt(const std::string& path, bool accept_data_loss,
                                   VerifyReport* report, const VerifyOptions& options = {});

// Opens `path` for writing and compacts it (Store::Compact).
Result<CompactReport> CompactStoreAt(const std::string& path, const CompactOptions& options);

}  // namespace auxstore
