// `auxstore compact`: drops what is not wanted, then compacts every family.
//
// Removes, in order: snapshots of dropped namespaces (--drop-ns, or not in
// --keep-ns), expired ones (--ttl), least-recently-used ones down to
// --max-bytes (the store's own TTL/LRU pass), record groups with no manifest
// (orphans); then runs CompactRange on every column family with the
// bottommost level forced, so erased bytes leave the disk.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "auxstore/prefix.h"
#include "auxstore/status.h"

namespace auxstore::cli {

struct CompactOptions {
  uint64_t ttl_seconds = 0;          // 0 = keep regardless of age
  uint64_t max_bytes = 0;            // 0 = no budget
  std::vector<NamespaceId> keep_ns;  // non-empty: drop every other namespace
  std::vector<NamespaceId> drop_ns;
};

struct CompactReport {
  uint64_t snapshots_before = 0, snapshots_after = 0;
  uint64_t payload_bytes_before = 0, payload_bytes_after = 0;
  uint64_t disk_bytes_before = 0, disk_bytes_after = 0;  // directory size
  uint64_t dropped_by_namespace = 0, expired = 0, evicted = 0;
  uint64_t orphan_snapshots_removed = 0;

  uint64_t disk_bytes_freed() const {
    return disk_bytes_before > disk_bytes_after ? disk_bytes_before - disk_bytes_after : 0;
  }
};

// Takes the writer's lock: Busy while another handle has the store open.
Result<CompactReport> CompactStore(const std::string& path, const CompactOptions& options);

}  // namespace auxstore::cli
