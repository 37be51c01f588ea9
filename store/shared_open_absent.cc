// Built instead of store/shared/ when librados is not found.
#include "store/shared_open.h"

namespace auxstore::shared {

Result<std::unique_ptr<Store>> OpenTieredStore(const Options&, const std::string&) {
  return Status::NotSupported(
      "Options::shared: this build has no RADOS shared tier (librados was not found; "
      "scripts/setup.sh installs librados-dev and libradospp-dev)");
}

}  // namespace auxstore::shared
