// A RocksDB FileSystem that makes every file it creates owner-only (0600),
// whatever the process umask: aux state is derived from users' prompts.
// A library must not change its host process's umask, so each created file
// is chmod-ed right after creation instead.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>

namespace auxstore::store_internal {

std::shared_ptr<rocksdb::FileSystem> NewOwnerOnlyFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base);

}  // namespace auxstore::store_internal
