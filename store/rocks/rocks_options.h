// The RocksDB settings the store runs with, each one decided and explained
// in rocks_options.cc (numbers: shared/perf-notes.md, shared/reliability-notes.md,
// bench/RESULTS.md).
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/env.h>
#include <rocksdb/file_system.h>
#include <rocksdb/options.h>

#include <memory>
#include <string>
#include <vector>

#include "auxstore/log.h"

namespace auxstore::store_internal {

// Column families, in the order the store opens them.
inline constexpr const char* kMetaCf = "auxstore.meta";
inline constexpr const char* kNamespacesCf = "auxstore.namespaces";
inline constexpr const char* kManifestsCf = "auxstore.manifests";
inline constexpr const char* kRecordsCf = "auxstore.records";
inline constexpr const char* kRecencyCf = "auxstore.recency";
inline constexpr const char* kRunsCf = "auxstore.runs";
inline constexpr const char* kPagesCf = "auxstore.pages";
inline constexpr const char* kRefsCf = "auxstore.refs";
enum CfIndex {
  kDefault = 0,
  kMeta,
  kNamespaces,
  kManifests,
  kRecords,
  kRecency,
  kRuns,
  kPages,
  kRefs,
  kCfCount
};

struct RocksSetup {
  std::unique_ptr<rocksdb::Env> env;  // must outlive the DB
  rocksdb::DBOptions db;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;  // indexed by CfIndex
};

// `base` is the file system under the owner-only wrapper (default: the
// real one); tests pass a fault-injecting one. RocksDB's info log goes to
// `log_sink` (records at `log_level` and above), never to a file.
RocksSetup MakeRocksSetup(std::shared_ptr<rocksdb::FileSystem> base = nullptr,
                          LogSink log_sink = {}, LogLevel log_level = LogLevel::kWarn);

// Options for an SstFileWriter producing a records-family file for ingestion.
rocksdb::Options RecordsSstWriterOptions(const RocksSetup& setup);

// Reads on the restore path: block checksums verified (XXH3, so cheap),
// blocks not cached (each chunk is read once per restore).
rocksdb::ReadOptions HotReadOptions();

}  // namespace auxstore::store_internal
