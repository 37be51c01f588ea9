// An XXH3-64 FileChecksumGenFactory for RocksDB.
//
// Debian's RocksDB 7.8.3 only ships a CRC32c generator (software, 1.36 GB/s)
// and DB::VerifyChecksum skips blob files; with file checksums recorded in
// the MANIFEST, DB::VerifyFileChecksums covers every SST (and blob) file.
#pragma once

#include <rocksdb/file_checksum.h>

#include <memory>

namespace auxstore::store_internal {

inline constexpr const char* kXxh3ChecksumName = "auxstore.XXH3_64";

std::shared_ptr<rocksdb::FileChecksumGenFactory> NewXxh3FileChecksumGenFactory();

}  // namespace auxstore::store_internal
