// Checks, before RocksDB opens a store, the one block of each table file that
// Debian's RocksDB 7.8.3 parses before it verifies its checksum: the
// properties block. ReadTablePropertiesHelper reads it with checksums off
// (for ingested files whose global sequence number was rewritten), builds a
// Block from it, and a damaged block footer trips a live assert
// (data_block_hash_index.cc:79 `num_buckets_ > 0`) that aborts the process
// (found by corruption_trial_test --cycles 3000). Every other block RocksDB
// reads is verified first. The store ingests with write_global_seqno off, so
// every properties block's checksum holds in an undamaged file.
#pragma once

#include <string>
#include <vector>

#include "auxstore/status.h"

namespace auxstore::store_internal {

// Reads the footer, the metaindex block and the properties block of
// `table_file` and verifies the XXH3 block checksums of the latter two.
// Corruption naming the file and the block when one fails, or when the file
// is too short or its footer does not parse; IOError when it cannot be read.
Status CheckTablePropertiesBlock(const std::string& table_file);

// CheckTablePropertiesBlock for every table file the store's current MANIFEST
// names (others RocksDB never opens). OK when the MANIFEST cannot be read:
// RocksDB's own open then refuses the store. The refusal names the file and
// says that `auxstore verify --repair` can fix it (refused_open_repair.h).
Status CheckTablePropertiesBlocks(const std::string& dir);

// The names ("000042.sst") of the table files the store's current MANIFEST
// names, read without opening any table; empty when CURRENT or the MANIFEST
// cannot be read. Blob files would be listed too (the store writes none).
std::vector<std::string> LiveTableFileNames(const std::string& dir);

// "; `auxstore verify --repair DIR` sets FILE aside ...": what a refusal
// caused by one unopenable table file appends to its message.
std::string RepairHint(const std::string& dir, const std::string& table_file);
// RepairHint for the first table file ("NNNNNN.sst") a RocksDB message
// names, "" when it names none.
std::string RepairHintFor(const std::string& dir, const std::string& rocksdb_message);

}  // namespace auxstore::store_internal
