// Built instead of store/shared/ when librados is not found.
#include "auxstore/shared_pool.h"
#include "store/shared_open.h"

namespace auxstore::shared {

Result<std::unique_ptr<Store>> OpenTieredStore(const Options&, const std::string&) {
  return Status::NotSupported(
      "Options::shared: this build has no RADOS shared tier (librados was not found; "
      "scripts/setup.sh installs librados-dev and libradospp-dev)");
}

}  // namespace auxstore::shared

namespace auxstore {

Result<SharedPoolListing> ListSharedPool(const std::string&, std::optional<NamespaceId>) {
  return Status::NotSupported(
      "ListSharedPool: this build has no RADOS shared tier (librados was not found)");
}

}  // namespace auxstore
