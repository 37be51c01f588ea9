// RadosPoolCheck: verify, repair and compact a pool's namespace
// (docs/shared-tier.md, "Pool verify, repair and compact"). Library calls:
// the CLI only prints their reports.
//
// Verify reads every manifest (bytes, xattrs and the pages it names, in one
// aio read op each) and every page some manifest names (aio, a bounded
// number in flight; bytes hashed and dropped, never held), checks each
// manifest's bytes against its auxstore.xxh3 and its page list against
// auxstore.pages, and each page's bytes against its name. It reports every
// manifest: ok, corrupt (the manifest itself, or a page it names whose bytes
// are not what its name says: which object, why) or missing a page.
//
// Repair rule: a manifest that is not ok can never be restored, so repair
// removes it; a page whose bytes are not what its name says is removed too
// (left in place, every later put of that page would find it "already
// stored" and name the damaged object again; removed, the next put stores it
// afresh). Every removal is guarded by the object version verify read: an
// object that changed since (a lease taken, a commit's touch) is left and
// reported, for the next verify. Healthy pages are never removed by repair:
// those only a removed manifest named become orphans that compact reclaims.
//
// Compact drops expired leases (guarded by the manifest's version: a lease
// renewed meanwhile stays) and reclaims pages no manifest names that are
// older than the grace (RadosReclaim's listing and guarded removal).
//
// Every call returns Unavailable, within about one op timeout of the
// cluster stopping to answer, when it does not answer.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "auxstore/status.h"
#include "store/rados/object_names.h"
#include "store/rados/rados_connection.h"

namespace auxstore::rados {

enum class ManifestHealth {
  kOk,
  kCorrupt,      // its own bytes or page list are damaged, or a page it names is
  kMissingPage,  // a page it names is not stored (and none it names is damaged)
};
std::string_view ManifestHealthName(ManifestHealth h);

struct ManifestCheck {
  std::string object;  // manifest.<hex of id>
  ManifestHealth health = ManifestHealth::kOk;
  std::string reason;              // not ok: which object, and why
  std::vector<PageKey> bad_pages;  // the damaged or missing pages it names
  uint64_t version = 0;            // the object version verify read
};

struct DamagedPage {
  PageKey key;
  uint64_t version = 0;  // the object version verify read
  std::string reason;
};

struct PoolVerifyReport {
  std::vector<ManifestCheck> manifests;  // every manifest, by object name
  std::vector<DamagedPage> damaged_pages;
  std::vector<PageKey> missing_pages;  // named by some manifest, not stored
  size_t pages = 0;                    // page objects in the namespace
  size_t pages_checked = 0;            // distinct pages named, read and hashed
  uint64_t bytes_checked = 0;
  size_t unnamed_pages = 0;  // pages no manifest names (compact's business)
  size_t foreign = 0;        // objects that are neither pages nor manifests

  size_t Count(ManifestHealth h) const;
  bool Clean() const {
    return Count(ManifestHealth::kOk) == manifests.size() && damaged_pages.empty();
  }
};

struct PoolRepairReport {
  PoolVerifyReport found;                         // what verify found before repairing
  std::vector<std::string> removed_manifests;     // manifest.<hex>
  std::vector<PageKey> removed_pages;             // damaged page objects
  std::vector<std::string> changed_since_verify;  // left alone: verify again
};

struct PoolCompactReport {
  size_t leases_dropped = 0;  // expired lease entries removed
  size_t pages_removed = 0;
  uint64_t bytes_freed = 0;  // the removed pages' sizes
  size_t named = 0;          // pages some manifest names (kept)
  size_t too_young = 0;      // unnamed, within the grace (kept)
};

// Every object name in the connection's namespace.
Result<std::vector<std::string>> ListNamespaceObjects(RadosConnection& conn);

class RadosPoolCheck {
 public:
  explicit RadosPoolCheck(RadosConnection& conn, size_t max_in_flight = 32)
      : conn_(conn), max_in_flight_(max_in_flight) {}

  Result<PoolVerifyReport> Verify();
  // Verify, then the repair rule above.
  Result<PoolRepairReport> Repair();
  // InvalidArgument when `grace` < 3 op timeouts (RadosReclaim).
  Result<PoolCompactReport> Compact(std::chrono::seconds grace);

 private:
  Status ReadManifests(const std::vector<std::string>& objects, PoolVerifyReport& report,
                       std::vector<std::vector<PageKey>>& named);
  Status CheckPages(const std::vector<PageKey>& keys, PoolVerifyReport& report);
  Result<size_t> DropExpiredLeases(const std::vector<std::string>& manifests);

  RadosConnection& conn_;
  size_t max_in_flight_;
};

}  // namespace auxstore::rados
