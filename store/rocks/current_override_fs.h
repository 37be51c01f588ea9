// A RocksDB FileSystem on which the store's CURRENT file reads as naming
// another MANIFEST, until RocksDB itself replaces CURRENT.
//
// Why: RocksDB 7.8.3 creates a new MANIFEST, renames a new CURRENT over the
// old one and only then fsyncs the directory. A power cut in between may
// keep the rename and drop the new MANIFEST's directory entry (a file
// system promises nothing for entries not yet fsynced), leaving CURRENT
// naming a file that is not there, while the MANIFEST before it is intact
// (RocksDB deletes it only later). The store then opens through that one,
// as CURRENT named it before the cut (store_dir.h, DirCheck), and the
// watermark check that follows every open decides whether anything
// acknowledged is missing. CURRENT is never changed here: a read-only open
// writes nothing, and a read-write open writes a new MANIFEST and CURRENT,
// after which CURRENT reads as it is.
#pragma once

#include <rocksdb/file_system.h>

#include <memory>
#include <string>

namespace auxstore::store_internal {

// `dir` is the store's directory; `manifest` the MANIFEST's file name
// ("MANIFEST-000028") CURRENT reads as naming.
std::shared_ptr<rocksdb::FileSystem> NewCurrentOverrideFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, const std::string& dir, const std::string& manifest);

}  // namespace auxstore::store_internal
