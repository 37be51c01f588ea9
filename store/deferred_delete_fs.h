// A RocksDB FileSystem that stops deleting table files once any write has
// failed, moving them to a trash folder instead.
//
// Why: when an fsync reports failure although the bytes reached the disk
// (Linux can), Debian's RocksDB 7.8.3 treats the MANIFEST edit of an
// ingestion as failed and deletes the ingested SST, while the edit is in
// fact durable: the next open then fails on a file the MANIFEST names but
// nobody has (found by tests/reliability/io_fault_test). After the first
// failed write the store is fenced and must be reopened anyway; keeping the
// files RocksDB drops in that window lets the reopen put them back.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

#include "auxstore/status.h"

namespace auxstore::store_internal {

inline constexpr const char* kTrashDir = "auxstore-trash";

std::shared_ptr<rocksdb::FileSystem> NewDeferredDeleteFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base);

// Moves every file of <db_dir>/auxstore-trash back into db_dir; returns how
// many. RocksDB deletes those the MANIFEST does not name at the next open.
Result<int> RestoreTrash(const std::string& db_dir);
// Removes the trash folder (after an open succeeded).
void PurgeTrash(const std::string& db_dir);

}  // namespace auxstore::store_internal
