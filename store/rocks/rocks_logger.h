// RocksDB's info log, routed to the store's LogSink (include/auxstore/log.h)
// instead of a LOG file in the store directory.
//
// Why not the file: RocksDB 7.8.3's file logger asserts after a write to it
// failed (a full disk made `auxstore_close` abort in `sync_without_flush_
// called_`, issue 12 finding 3), a refused open still created or rotated it,
// and nobody reads it. This logger writes no file and never fails.
#pragma once

#include <rocksdb/env.h>

#include <memory>

#include "auxstore/log.h"

namespace auxstore::store_internal {

// Records at `level` and above reach `sink` (empty: stderr, once each).
std::shared_ptr<rocksdb::Logger> NewSinkLogger(LogSink sink, LogLevel level);

}  // namespace auxstore::store_internal
