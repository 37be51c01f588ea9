// RadosManifests: a snapshot's manifest in the shared tier, committed last
// and atomically, and the leases that keep it from being erased while a node
// restores from it.
//
// Commit protocol (docs/shared-tier.md):
//   1. every page the manifest names is touched (one write op per page:
//      assert_exists + setxattr auxstore.ref): it must be stored, and its
//      version and mtime move, which a concurrent compact's guarded remove
//      sees (RadosReclaim);
//   2. only when all were acknowledged, ONE write op creates the manifest:
//      exclusive create + write_full(bytes) + xattrs (XXH3-128, page count)
//      + omap (the pages it names). It applies whole or not at all, so a
//      reader on any node sees the manifest with all its pages or nothing.
//
// Leases: omap keys lease.<holder> -> deadline (ms since the Unix epoch, the
// holder's clock) on the manifest object itself, set with assert_exists in
// the same op (a lease never recreates an erased manifest). Erase reads the
// leases and the object's version, refuses (Busy) while any deadline lies
// ahead, and removes with assert_version: a lease taken in between changes
// the version and the remove is refused and retried. A holder that died stops
// blocking once its deadline passed. Why not cls_lock: a lock call on a
// missing object creates it, which would resurrect an erased manifest as an
// empty object and block its exclusive re-commit; and a lock cannot be made
// atomic with the remove through librados's public API.
#pragma once

#include <chrono>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/status.h"
#include "store/rados/object_names.h"
#include "store/rados/rados_connection.h"

namespace auxstore::rados {

enum class CommitOutcome {
  kCommitted,         // this call created the manifest
  kAlreadyCommitted,  // another writer committed the very same bytes first
};

struct StoredManifest {
  std::vector<uint8_t> bytes;  // checked against the manifest's XXH3-128
  std::vector<PageKey> pages;  // the pages it names, sorted
};

struct Lease {
  std::string holder;
  std::chrono::system_clock::time_point deadline;
};

class RadosManifests {
 public:
  explicit RadosManifests(RadosConnection& conn, size_t max_in_flight = 32)
      : conn_(conn), max_in_flight_(max_in_flight) {}

  // Commits manifest `id` (1..512 bytes, the caller's name for the snapshot)
  // naming `pages`. NotFound (nothing committed) when a page is not stored;
  // Busy when another writer committed different bytes under `id`.
  Result<CommitOutcome> Commit(ByteSpan id, ByteSpan bytes, std::span<const PageKey> pages);

  // NotFound when no manifest `id`; Corruption when its bytes do not match
  // its hash or its page list its count.
  Result<StoredManifest> Read(ByteSpan id);

  // Takes or renews `holder`'s lease on manifest `id` until now + duration.
  // NotFound when the manifest is not there.
  Status TakeLease(ByteSpan id, std::string_view holder, std::chrono::milliseconds duration);
  // TakeLease of each ids[i] in one windowed round of aio ops: result i is
  // what TakeLease(ids[i]) would return.
  std::vector<Status> TakeLeases(std::span<const ByteSpan> ids, std::string_view holder,
                                 std::chrono::milliseconds duration);
  Status ReleaseLease(ByteSpan id, std::string_view holder);
  Result<std::vector<Lease>> Leases(ByteSpan id);

  // Removes manifest `id` (its pages stay until compact finds them unnamed).
  // Busy while another holder's lease is live; NotFound when absent.
  Status Erase(ByteSpan id);

  // The pages manifest object `object_name` (manifest.<hex>) names, sorted.
  Result<std::vector<PageKey>> PagesOf(const std::string& object_name);

 private:
  Status TouchPages(const std::string& manifest, std::span<const PageKey> pages);
  Result<CommitOutcome> SameBytesOrBusy(const std::string& object, ByteSpan bytes);

  RadosConnection& conn_;
  size_t max_in_flight_;
};

}  // namespace auxstore::rados
