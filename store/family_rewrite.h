// Writing a column family again from its table files, each read on its own
// without RocksDB (table_walk.h: verified data blocks only), newest file
// first, so that the newest version of each key wins and deletions and
// range deletions still hide what they hid. Both repairs use it: the one of
// a store RocksDB refuses to open (refused_open_repair.h) and the one of an
// open store (DbStore::RewriteFamily).
//
// Why not RocksDB's own iterator over the family: a merged iterator reads
// every level-0 file on a Seek, so a damaged block in one file fails the
// Seek of a key that only an intact file holds, and every entry of the
// intact files after the damage was lost with it. Read one by one, a damaged
// block costs only the entries it holds.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/metadata.h>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "auxstore/status.h"
#include "store/table_walk.h"

namespace auxstore::store_internal {

// One table file of the family.
struct RewriteTable {
  rocksdb::LiveFileMetaData meta;
  std::string path;      // where it is read from
  bool damaged = false;  // known damaged: an incomplete walk is expected
};

struct RewriteHooks {
  // Whether an entry (its newest version, a value) is written again; null
  // keeps every one.
  std::function<bool(std::string_view key, std::string_view value)> keep;
  // Read entries back out of the damaged data blocks of damaged tables
  // (sst_block_salvage.h); `keep` must then check each one, as nothing in a
  // damaged block is trusted.
  bool salvage_damaged_blocks = false;
  // Called after each table is walked; an error stops the rewrite.
  std::function<Status(const RewriteTable& table, const TableWalk& walk)> on_table;
  // Called for each key written again.
  std::function<void(std::string_view key)> on_written;
};

struct RewriteCounts {
  uint64_t written = 0;         // entries written again (salvaged ones included)
  uint64_t not_kept = 0;        // newest versions `keep` refused
  uint64_t salvaged = 0;        // of `written`, read out of damaged blocks
  uint64_t damaged_blocks = 0;  // data blocks that did not verify
};

// Newest first, as a lookup searches them: level 0 by largest sequence
// number, then each level down.
void SortNewestFirst(std::vector<RewriteTable>* tables);

// Writes the newest version of every key `tables` hold (all of the
// family's table files, its memtable flushed first) into `family` again,
// newer than all of them; the caller then drops the old files.
Status WriteNewestVersions(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* family,
                           const std::string& family_name, std::vector<RewriteTable> tables,
                           const RewriteHooks& hooks, RewriteCounts* counts);

}  // namespace auxstore::store_internal
