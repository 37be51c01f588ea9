// Opening a store on a given RocksDB FileSystem: the seam fault-injection and
// power-loss tests use (tests/reliability/). Not part of the public API.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

#include "auxstore/store.h"

namespace auxstore::store_internal {

Result<std::unique_ptr<Store>> OpenStoreOnFileSystem(const Options& options,
                                                     const std::string& path,
                                                     std::shared_ptr<rocksdb::FileSystem> fs);

}  // namespace auxstore::store_internal
