// The shared tier's entry point for Store::Open (store/shared/): a store
// whose Options::shared names a pool. Defined in store/shared/ when librados
// is built, else by store/shared_open_absent.cc (NotSupported).
#pragma once

#include <memory>
#include <string>

#include "auxstore/store.h"

namespace auxstore::shared {

Result<std::unique_ptr<Store>> OpenTieredStore(const Options& options, const std::string& path);

}  // namespace auxstore::shared
