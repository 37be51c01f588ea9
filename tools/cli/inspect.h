// Read-only views of a store: `auxstore stats`, `ls` and `inspect`. Each
// opens the store read-only, so it works beside the engine's live writer.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/store.h"

namespace auxstore::cli {

struct NamespaceTotals {
  NamespaceSpec spec;
  uint64_t snapshots = 0, payload_bytes = 0;
};

struct StoreSummary {
  std::map<NamespaceId, NamespaceTotals> namespaces;
  uint64_t snapshots = 0, payload_bytes = 0;
  uint64_t unique_bytes = 0;  // stored, each shared page once
  uint64_t disk_bytes = 0;    // the store directory
  uint64_t commit_seq = 0, durable_watermark = 0, quarantines = 0;
  StoreStats stats;  // the handle's, with snapshots and payload bytes counted here
};
Result<StoreSummary> SummarizeStore(const std::string& path);

// Every snapshot, in key order (optionally of one namespace).
Result<std::vector<SnapshotInfo>> ListSnapshots(const std::string& path,
                                                std::optional<NamespaceId> ns);

struct SnapshotDetail {
  NamespaceId ns = 0;
  NamespaceSpec spec;
  Manifest manifest;
};
// The snapshot of `prefix` in `ns`, or in whichever namespace holds it
// (InvalidArgument when several do: pass the namespace).
Result<SnapshotDetail> FindSnapshot(Store& store, const Prefix& prefix,
                                    std::optional<NamespaceId> ns);
// `shared` (a rados:// URI, "" = none): a snapshot the local directory
// lacks is restored from that pool (with `ns` given), so the directory is
// opened read-write, not beside a live writer.
Result<SnapshotDetail> InspectSnapshot(const std::string& path, const Prefix& prefix,
                                       std::optional<NamespaceId> ns,
                                       const std::string& shared = {});
// The store at `path` for reading: read-only, or with `shared` (a rados://
// URI) read-write on that pool.
Result<std::unique_ptr<Store>> OpenForReading(const std::string& path, const std::string& shared);

// Bytes of a snapshot (or of one of its layers) held in pages an earlier
// put stored: what it shares rather than stores.
uint64_t SharedBytes(const Manifest& m, const LayerEntry& l);
uint64_t SharedBytes(const Manifest& m);

// A namespace id as 16 hex digits, and back (InvalidArgument when malformed).
std::string NamespaceHex(NamespaceId ns);
Result<NamespaceId> ParseNamespaceHex(std::string_view text);

}  // namespace auxstore::cli
