// Integrated BlobDB, the write path auxstore measured and decided against
// (docs/architecture.md, bench/RESULTS.md): the same chunked records written
// with Put into a RocksDB with enable_blob_files, WAL on, each snapshot one
// WriteBatch committed with sync — the straightforward way to get the same
// atomicity and durability from RocksDB.
#pragma once

#include <string>

#include "bench/store_contender.h"
#include "bench/workload.h"

namespace auxstore::bench {

WriteResult WriteBlobDb(const std::string& dir, const WorkloadData& data);

}  // namespace auxstore::bench
