// Damage to one record of a closed store, made through raw RocksDB (the
// store's own column-family setup): the tests' way to put real altered
// bytes where a read will meet them.
#pragma once

#include <gtest/gtest.h>
#include <rocksdb/db.h>

#include <functional>
#include <string>
#include <vector>

#include "store/rocks/rocks_options.h"

namespace auxstore::testing {

// Reads the value of `key` in column family `cf` of the closed store at
// `path`, lets `edit` change it, writes it back (synced: a reopen replays it
// into a memtable; `flush`: into a new level-0 table file instead).
inline void RewriteValue(const std::string& path, int cf, const std::string& key,
                         const std::function<void(std::string*)>& edit, bool flush = false) {
  namespace si = store_internal;
  si::RocksSetup setup = si::MakeRocksSetup();
  std::vector<rocksdb::ColumnFamilyHandle*> cfs;
  rocksdb::DB* raw = nullptr;
  ASSERT_TRUE(rocksdb::DB::Open(setup.db, path, setup.cfs, &cfs, &raw).ok());
  std::string value;
  ASSERT_TRUE(raw->Get(rocksdb::ReadOptions(), cfs[cf], key, &value).ok());
  edit(&value);
  rocksdb::WriteOptions wo;
  wo.sync = true;
  ASSERT_TRUE(raw->Put(wo, cfs[cf], key, value).ok());
  if (flush) {
    ASSERT_TRUE(raw->Flush(rocksdb::FlushOptions(), cfs[cf]).ok());
  }
  for (auto* h : cfs) (void)raw->DestroyColumnFamilyHandle(h);
  (void)raw->Close();
  delete raw;
}

// RewriteValue of the record `key`.
inline void RewriteRecord(const std::string& path, const std::string& key,
                          const std::function<void(std::string*)>& edit, bool flush = false) {
  RewriteValue(path, store_internal::kRecords, key, edit, flush);
}

}  // namespace auxstore::testing
