// A RocksDB FileSystem that shows one MANIFEST file only up to a byte
// offset: its sequential reads end there and its size is reported as that.
//
// Why: a power cut can keep a MANIFEST's unsynced tail with garbage in it,
// which RocksDB 7.8.3 refuses (a complete last record whose checksum
// fails). store/manifest_tail.h finds that only the tail is bad; the store
// then opens with this wrapper, reading the MANIFEST up to the end of its
// last valid record, as if the cut had dropped the tail whole. The file is
// never changed: a read-only open writes nothing, and a read-write open
// writes a new MANIFEST from the recovered state (RocksDB does at every
// read-write open), which leaves the damaged one obsolete.
//
// Every other file, and that file's writes, pass through unchanged. RocksDB
// reads a MANIFEST sequentially only (VersionSet::Recover,
// ListColumnFamilies).
#pragma once

#include <rocksdb/file_system.h>

#include <cstdint>
#include <memory>
#include <string>

namespace auxstore::store_internal {

// `manifest` is the MANIFEST's path; `visible_bytes` how much of it shows.
std::shared_ptr<rocksdb::FileSystem> NewCappedManifestFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, const std::string& manifest, uint64_t visible_bytes);

}  // namespace auxstore::store_internal
