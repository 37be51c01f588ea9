// Opening a store's RocksDB directly, the way the store does (same column
// families, same XXH3 file-checksum factory from MakeRocksSetup()), for the
// offline tools that look below the Store API: verify, repair, compact.
#pragma once

#include <rocksdb/db.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "auxstore/status.h"
#include "store/rocks_options.h"

namespace auxstore::cli {

class RawDb {
 public:
  // read_only: OpenForReadOnly (works while a writer holds the store);
  // otherwise takes the lock (Busy when another handle holds it).
  static Result<std::unique_ptr<RawDb>> Open(const std::string& path, bool read_only);
  ~RawDb();
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  rocksdb::DB* db() const { return db_; }
  rocksdb::ColumnFamilyHandle* cf(store_internal::CfIndex i) const { return cfs_[i]; }
  const std::vector<rocksdb::ColumnFamilyHandle*>& families() const { return cfs_; }
  const store_internal::RocksSetup& setup() const { return setup_; }
  const std::string& path() const { return path_; }

 private:
  RawDb(std::string path) : path_(std::move(path)), setup_(store_internal::MakeRocksSetup()) {}

  std::string path_;
  store_internal::RocksSetup setup_;
  rocksdb::DB* db_ = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> cfs_;
};

// rocksdb::Status -> Status (Busy for a held lock), `what` naming the step.
Status FromRocksStatus(const rocksdb::Status& s, const std::string& what);

// Bytes of every regular file under `dir` (what the store occupies on disk).
uint64_t DirectoryBytes(const std::string& dir);

}  // namespace auxstore::cli
