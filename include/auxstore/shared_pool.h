// The shared tier's pool seen from outside any store (docs/shared-tier.md):
// what `auxstore ls --shared` and `auxstore stats --shared` print, as a
// library call (the CLI only prints it).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/store.h"

namespace auxstore {

struct SharedPoolListing {
  // The snapshots whose manifest objects check (their XXH3-128) and decode,
  // in (namespace, prefix) order; each manifest as its writer committed it.
  std::vector<SnapshotInfo> snapshots;
  // The namespaces those snapshots belong to, as their writers registered them.
  std::map<NamespaceId, NamespaceSpec> namespaces;
  uint64_t damaged_manifests = 0;  // manifest objects that do not (`verify --shared` names them)
  uint64_t page_objects = 0;       // page objects in the pool's namespace, named or not
  uint64_t pages_named = 0;        // distinct pages the listed snapshots name
  uint64_t unique_bytes = 0;       // their bytes, each page once
};

// Lists the pool `uri` (rados://POOL?conf=PATH&namespace=NS..., as
// Options::shared) without opening a store: every manifest object read in
// batches and checked. `ns`: only that namespace's snapshots (the object
// counts stay the pool's). Unavailable when the pool does not answer within
// the URI's timeout; NotSupported in a build without librados.
Result<SharedPoolListing> ListSharedPool(const std::string& uri,
                                         std::optional<NamespaceId> ns = std::nullopt);

}  // namespace auxstore
