// What `ls --shared` and `stats --shared` print of a shared pool
// (auxstore::ListSharedPool): the directory's and the pool's snapshots
// merged, each marked where it lives, and the pool's counts.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "auxstore/shared_pool.h"

namespace auxstore::cli {

// One snapshot as `ls` prints it: its JSON object, or its line; `where`
// (local, pool, both), when not empty, goes with it.
nlohmann::json SnapshotJson(const SnapshotInfo& s, const char* where = nullptr);
std::string SnapshotLine(const SnapshotInfo& s, const char* where = nullptr);

// ls --shared: every snapshot of `local` (the directory) and `pool`, in
// (namespace, prefix) order, with where=local|pool|both.
void PrintMergedListing(const std::vector<SnapshotInfo>& local, const SharedPoolListing& pool,
                        bool as_json, std::ostream& out);

// stats --shared: the pool's part of the report.
nlohmann::json PoolStatsJson(const SharedPoolListing& pool);
void PrintPoolStats(const SharedPoolListing& pool, std::ostream& out);

}  // namespace auxstore::cli
