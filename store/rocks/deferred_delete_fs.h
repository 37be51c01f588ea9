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

#include <map>
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

// The trash folder before an open: whether it exists, and each entry's
// inode (so an entry an open added or replaced is told apart).
struct TrashListing {
  bool exists = false;
  std::map<std::string, uint64_t> inodes;
};
TrashListing ListTrash(const std::string& db_dir);

// After a failed open: takes out of the trash what the attempt put there.
// A file RocksDB created and dropped (a partial SST of a recovery flush
// that hit a full disk) is removed; one that was in db_dir before the
// attempt (`dir_before`: name -> size) is moved back. The folder itself is
// removed when the attempt created it. What an earlier writer left in the
// trash stays for RestoreTrash.
void UndoTrash(const std::string& db_dir, const TrashListing& before,
               const std::map<std::string, uint64_t>& dir_before);

}  // namespace auxstore::store_internal
