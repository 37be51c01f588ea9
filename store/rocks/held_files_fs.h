// A RocksDB FileSystem for read-only opens that holds every table file it
// opens, so a writer's deletions cannot pull a file out from under a reader.
//
// Why: a read-only open beside a live writer has a fixed view (the MANIFEST
// it recovered). Reads go through table readers RocksDB opened at open time
// (max_open_files = -1), which keep their descriptors, but RocksDB's
// checksum checks (DB::VerifyChecksum, VerifyFileChecksums, the store's own
// per-file check) open each file again by name. A writer that compacted,
// reclaimed or evicted meanwhile has deleted some of those files, and the
// reopen by name failed with ENOENT, which `auxstore verify` reported as a
// damaged file (issue 20 break 1). deferred_delete_fs.h does not cover it:
// that wrapper belongs to the writer and keeps files only after a failed
// write.
//
// This wrapper keeps one read-only descriptor of each table file from the
// first time RocksDB opens it, and when a later open, stat or size query by
// name finds the file gone, answers it from the descriptor
// (/proc/self/fd/N reaches an unlinked file): the reader checks the bytes of
// the view it opened. The held files are the ones the reader's table
// readers hold anyway, so no space is kept that the reader did not keep
// already. Descriptors are closed with the file system (the store's close).
#pragma once

#include <rocksdb/file_system.h>

#include <memory>

namespace auxstore::store_internal {

std::shared_ptr<rocksdb::FileSystem> NewHeldFilesFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base);

}  // namespace auxstore::store_internal
