// Every entry of a table file, read without RocksDB: the data blocks the
// index block names when it verifies (a damaged data block is then skipped),
// and otherwise without the index: the data blocks of a block-based table
// come first, back to back, each followed by its 5-byte trailer, so they
// are walked from offset 0, a block's end found where its restart array and
// a matching XXH3 trailer are (the walk ends at a damaged one). Only
// verified blocks are parsed. This reads a table whose footer,
// index, metaindex or properties block is damaged (RocksDB refuses to open
// it, and with it the whole store: refused_open_repair.h) as well as an
// intact one (then the walk must account for every entry the table's
// properties count).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "auxstore/status.h"

namespace auxstore::store_internal {

// RocksDB's value types the store's tables hold (db/dbformat.h).
inline constexpr uint8_t kTypeDeletion = 0x0;
inline constexpr uint8_t kTypeValue = 0x1;
inline constexpr uint8_t kTypeSingleDeletion = 0x7;

struct TableEntry {
  std::string_view user_key;
  uint64_t sequence = 0;
  uint8_t type = kTypeValue;  // kTypeValue, kTypeDeletion or kTypeSingleDeletion
  std::string_view value;
};

struct RangeTombstone {
  std::string begin, end;  // user keys, [begin, end)
  uint64_t sequence = 0;
};

struct TableWalk {
  uint64_t entries = 0;         // point entries handed to the callback
  uint64_t blocks = 0;          // data blocks verified and read
  uint64_t damaged_blocks = 0;  // data blocks the index names that did not verify
  // Where each of those is, as the index names it (offset, size without
  // the trailer): sst_block_salvage.h can read entries back out of one.
  std::vector<std::pair<uint64_t, uint64_t>> damaged_block_handles;
  uint64_t stopped_at = 0;  // the offset the walk ended at
  // Where the data blocks end, from the footer and metaindex (the first
  // block after them), when those verify; and whether the walk got there.
  std::optional<uint64_t> data_end;
  bool reached_data_end = false;
  // From the properties block, when it verifies.
  std::optional<uint64_t> expected_entries;  // point entries and range deletions
  std::optional<uint64_t> expected_range_deletions;
  // From the index block, when it verifies: one entry per data block.
  std::optional<uint64_t> expected_blocks;
  // From the range deletion block (none when the table has none); unknown
  // when the metaindex or that block is damaged.
  bool range_tombstones_known = false;
  std::vector<RangeTombstone> range_tombstones;
  std::string stop_reason;  // why the walk ended before data_end, or ""

  // The walk read every entry the table holds, as its own metadata says
  // (the properties block's count, or else the index block's).
  bool Complete() const;
  // "N of M entries" / "N entries in B of B data blocks", and where and why
  // the walk stopped.
  std::string Describe() const;
};

// Walks the data blocks of `path` in order, calling `on_entry` for every
// entry (its bytes valid during the call only); a callback error ends the
// walk and is returned. The walk ends at the data blocks' end, or at the
// first place no verified data block starts (recorded in `out`, not an
// error). IOError when the file cannot be read.
Status WalkTable(const std::string& path, const std::function<Status(const TableEntry&)>& on_entry,
                 TableWalk* out);

}  // namespace auxstore::store_internal
