// The durable watermark: the highest commit sequence known to be durable,
// kept in a file of its own beside RocksDB's.
//
// No RocksDB recovery mode notices a WAL or MANIFEST truncated at a random
// offset (shared/reliability-notes.md #3): the database simply opens with
// fewer commits. Comparing the commit sequence RocksDB recovered with this
// file turns that silent loss into an error at open.
//
// File: "auxstore-watermark v1 <seq> <xxh3-64 hex of the text before it>\n",
// written to a temp file, fsynced, renamed over the old one, directory fsynced.
#pragma once

#include <rocksdb/file_system.h>

#include <cstdint>
#include <string>

#include "auxstore/status.h"

namespace auxstore::store_internal {

inline constexpr const char* kWatermarkFileName = "AUXSTORE-WATERMARK";

// NotFound when the file does not exist; Corruption when it does not parse.
Result<uint64_t> ReadWatermark(const std::string& dir);
// Written through `fs` (the store's RocksDB file system, so fault-injecting
// and power-loss tests see it); the second form uses the real one.
Status WriteWatermark(rocksdb::FileSystem& fs, const std::string& dir, uint64_t seq);
Status WriteWatermark(const std::string& dir, uint64_t seq);

}  // namespace auxstore::store_internal
