// The store's commit: one atomic RocksDB write holding a change's manifest
// and the page ledger's entries for it (store/page_ledger.h names it only
// as CommitBatch, so the ledger's interface names no RocksDB type).
#pragma once

#include <rocksdb/write_batch.h>

namespace auxstore::store_internal {

struct CommitBatch {
  rocksdb::WriteBatch rocks;
};

}  // namespace auxstore::store_internal
