// `verify --repair` on a store RocksDB refuses to open because a live table
// file cannot be opened: its footer, index, metaindex or properties block
// is damaged (RocksDB opens every table at open and reads those blocks
// first; 7.8.3 even asserts on a damaged properties block, so
// table_precheck.h refuses that one before RocksDB sees it). Repair cannot
// start on such a store, so this runs first, on the store directory:
//
//  1. Each live table file that cannot be opened is moved, whole, into
//     <store>/auxstore-damaged/ (kept there, and reported, for the operator
//     to delete; a later repair finds it there again).
//  2. RocksDB opens the store with paranoid checks off (a missing table is
//     then no reason to refuse) and compactions held.
//  3. Each column family that had such a file is rewritten from its table
//     files, read without RocksDB (table_walk.h: verified data blocks, no
//     index needed), newest file first so that the newest version of each
//     key wins and deletions and range deletions still hide what they hid;
//     then every table file it had before is dropped (bottom level first,
//     level 0 oldest first), the damaged one with them.
//
// What the damaged file held that is still readable (its data blocks, when
// only its footer or index blocks are damaged: all of it) is kept; what it
// lost is reported, and the store's own repair (RebuildDerived, the
// quarantine of snapshots whose records are gone) deals with the rest once
// the store opens. Killed at any point, the store is refused as before or
// opens repaired, and running the repair again finishes the job: the
// rewrite only ever adds the newest versions the family already holds.
#pragma once

#include <string>
#include <vector>

#include "auxstore/log.h"
#include "auxstore/status.h"

namespace auxstore::store_internal {

inline constexpr const char* kDamagedDir = "auxstore-damaged";

// Under the writer's lock (Busy when another handle holds it). Returns one
// line per file set aside and per family rewritten; empty when no live
// table file of the store is unopenable (the refusal has another cause:
// nothing was changed). An error leaves the store refused, never worse.
Result<std::vector<std::string>> RepairUnopenableTables(const std::string& dir,
                                                        const LogSink& log_sink,
                                                        LogLevel log_level);

}  // namespace auxstore::store_internal
