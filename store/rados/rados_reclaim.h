// RadosReclaim: what compact may remove from a pool's namespace — pages no
// manifest names that are older than a grace period (the orphans of a writer
// killed mid-put, and pages only erased manifests named) — and their removal.
//
// Safe beside live writers: a page is removed only with assert_version of
// the version the listing saw. A commit touches every page it names before
// its manifest is created (RadosManifests), which moves that version, so a
// page a commit claimed after the listing is never removed; one claimed
// before the listing has a fresh mtime and is not old enough. The grace must
// cover a commit's touch-to-create window (at most 2 op timeouts: Commit
// retouches when its touch round took longer than one) and the clock skew
// between nodes (mtimes are the writers' clocks); ListReclaimable refuses a
// grace under 3 op timeouts.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "auxstore/status.h"
#include "store/rados/object_names.h"
#include "store/rados/rados_connection.h"

namespace auxstore::rados {

struct UnnamedPage {
  PageKey key;
  uint64_t version = 0;  // the object version the listing saw
  std::chrono::system_clock::time_point mtime;
  uint64_t bytes = 0;  // its size
};

struct ReclaimListing {
  std::vector<UnnamedPage> reclaimable;  // unnamed and older than the grace
  size_t pages = 0;                      // page objects seen
  size_t manifests = 0;                  // manifest objects seen
  size_t named = 0;                      // pages some manifest names
  size_t too_young = 0;                  // unnamed but within the grace
  std::vector<std::string> foreign;      // objects that are neither (left alone)
};

class RadosReclaim {
 public:
  explicit RadosReclaim(RadosConnection& conn, size_t max_in_flight = 32)
      : conn_(conn), max_in_flight_(max_in_flight) {}

  // Lists the namespace. InvalidArgument when `grace` < 3 op timeouts.
  Result<ReclaimListing> ListReclaimable(std::chrono::seconds grace);

  // Removes each listed page unless it changed since the listing (then it is
  // left: a commit claimed it). Returns how many were removed; their sizes
  // added to *bytes_freed when given.
  Result<size_t> Reclaim(std::span<const UnnamedPage> pages, uint64_t* bytes_freed = nullptr);

 private:
  Result<std::vector<std::string>> ListObjects();

  RadosConnection& conn_;
  size_t max_in_flight_;
};

}  // namespace auxstore::rados
