// ListSharedPool (include/auxstore/shared_pool.h): the pool's snapshots and
// object counts, from the shared tier's own listing.
#include "auxstore/shared_pool.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "store/shared/shared_tier.h"

namespace auxstore {

Result<SharedPoolListing> ListSharedPool(const std::string& uri, std::optional<NamespaceId> ns) {
  AUXSTORE_ASSIGN_OR_RETURN(auto tier, shared::SharedTier::Open(uri));
  AUXSTORE_ASSIGN_OR_RETURN(shared::SharedTier::Listing listing, tier->ListRecords(ns));
  SharedPoolListing out;
  out.damaged_manifests = listing.damaged;
  out.page_objects = listing.page_objects;
  std::map<rados::PageKey, uint64_t> pages;  // each named page's bytes
  for (shared::SharedRecord& r : listing.records) {
    for (const shared::SharedLayer& l : r.layers) {
      for (const shared::Segment& s : l.segments) pages.emplace(s.key, s.bytes);
    }
    out.namespaces.emplace(r.ns, r.spec);
    out.snapshots.push_back({r.ns, r.prefix, std::move(r.manifest)});
  }
  std::sort(out.snapshots.begin(), out.snapshots.end(),
            [](const SnapshotInfo& a, const SnapshotInfo& b) {
              return std::tie(a.ns, a.prefix.bytes) < std::tie(b.ns, b.prefix.bytes);
            });
  out.pages_named = pages.size();
  for (const auto& [key, bytes] : pages) out.unique_bytes += bytes;
  return out;
}

}  // namespace auxstore
