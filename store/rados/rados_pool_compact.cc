// RadosPoolCheck::Compact: expired leases dropped, unnamed old pages
// reclaimed (rados_pool_check.h).
#include <cerrno>
#include <charconv>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "store/rados/manifest_fields.h"
#include "store/rados/rados_aio.h"
#include "store/rados/rados_pool_check.h"
#include "store/rados/rados_reclaim.h"

namespace auxstore::rados {

// Reads each manifest's leases and version in one aio op; removes the expired
// ones in a second op guarded by that version, so a lease renewed in between
// (which moves the version) is never dropped: that manifest waits for the
// next compact.
Result<size_t> RadosPoolCheck::DropExpiredLeases(const std::vector<std::string>& manifests) {
  const size_t n = manifests.size();
  std::vector<librados::ObjectReadOperation> reads(n);
  std::vector<std::map<std::string, librados::bufferlist>> leases(n);
  std::unique_ptr<bool[]> more(new bool[n]());
  std::vector<uint64_t> versions(n, 0);
  std::vector<std::set<std::string>> expired(n);
  std::optional<Status> failed;
  const int64_t now = NowUnixMs();
  RunWindowed(
      n, max_in_flight_,
      [&](size_t i, librados::AioCompletion* c) {
        reads[i].omap_get_vals2("", std::string(kLeasePrefix), kOmapPage, &leases[i], &more[i],
                                nullptr);
        return conn_.io().aio_operate(manifests[i], c, &reads[i], nullptr);
      },
      [&](size_t i, int rc, librados::AioCompletion* c) {
        if (rc == -ENOENT) return;  // erased since the listing
        if (rc < 0) {
          if (!failed) failed = conn_.Check(rc, "read the leases of " + manifests[i]);
          return;
        }
        versions[i] = c->get_version64();
        for (const auto& [key, v] : leases[i]) {
          auto deadline = ParseDecimal(v);
          if (deadline && *deadline <= now) expired[i].insert(key);
        }
      });
  if (failed) return *failed;
  std::vector<size_t> todo;
  for (size_t i = 0; i < n; ++i) {
    if (!expired[i].empty()) todo.push_back(i);
  }
  std::vector<librados::ObjectWriteOperation> writes(todo.size());
  size_t dropped = 0;
  RunWindowed(
      todo.size(), max_in_flight_,
      [&](size_t j, librados::AioCompletion* c) {
        const size_t i = todo[j];
        writes[j].assert_version(versions[i]);
        writes[j].omap_rm_keys(expired[i]);
        return conn_.io().aio_operate(manifests[i], c, &writes[j]);
      },
      [&](size_t j, int rc, librados::AioCompletion*) {
        const size_t i = todo[j];
        if (rc >= 0) {
          dropped += expired[i].size();
        } else if (rc != -ERANGE && rc != -EOVERFLOW && rc != -ENOENT && !failed) {
          failed = conn_.Check(rc, "drop the expired leases of " + manifests[i]);
        }
      });
  if (failed) return *failed;
  return dropped;
}

Result<PoolCompactReport> RadosPoolCheck::Compact(std::chrono::seconds grace) {
  RadosReclaim reclaim(conn_, max_in_flight_);
  // The listing first: it refuses a short grace before anything changes.
  AUXSTORE_ASSIGN_OR_RETURN(ReclaimListing listing, reclaim.ListReclaimable(grace));
  PoolCompactReport out;
  out.named = listing.named;
  out.too_young = listing.too_young;
  AUXSTORE_ASSIGN_OR_RETURN(std::vector<std::string> objects, ListNamespaceObjects(conn_));
  std::vector<std::string> manifests;
  for (std::string& name : objects) {
    if (name.starts_with(kManifestPrefix)) manifests.push_back(std::move(name));
  }
  AUXSTORE_ASSIGN_OR_RETURN(out.leases_dropped, DropExpiredLeases(manifests));
  AUXSTORE_ASSIGN_OR_RETURN(out.pages_removed,
                            reclaim.Reclaim(listing.reclaimable, &out.bytes_freed));
  return out;
}

}  // namespace auxstore::rados
