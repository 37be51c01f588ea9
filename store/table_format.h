// RocksDB's block-based table format (format_version 1-5, as Debian's 7.8.3
// writes it; table/format.h), read without RocksDB: every offset and length
// is checked against the file, and a block is trusted only once its XXH3
// trailer matches. For the checks RocksDB cannot make without aborting
// (table_precheck.h) and for reading a table RocksDB refuses to open
// (table_walk.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "auxstore/status.h"

namespace auxstore::store_internal::table_format {

inline constexpr uint64_t kBlockBasedTableMagic = 0x88e241b785f4cff7ull;
inline constexpr size_t kFooterBytes =
    53;  // checksum type, 2 handles (padded to 40), version, magic
inline constexpr size_t kBlockTrailerBytes = 5;  // compression type, fixed32 checksum
inline constexpr uint8_t kChecksumXXH3 = 4;
inline constexpr uint8_t kNoCompression = 0;

uint32_t Fixed32(const uint8_t* p);
uint64_t Fixed64(const uint8_t* p);
// A varint at [*p, end); advances *p. Nullopt when it runs off the end or is
// longer than a uint64.
std::optional<uint64_t> Varint(const uint8_t** p, const uint8_t* end);

struct Handle {
  uint64_t offset = 0, size = 0;  // size: the block's contents, without its trailer
};
std::optional<Handle> DecodeHandle(const uint8_t** p, const uint8_t* end);

// The XXH3 block checksum RocksDB writes (table/format.cc
// ComputeBuiltinChecksumWithLastByte): the low 32 bits of XXH3 over the
// block, mixed with the trailer's compression-type byte.
uint32_t BlockChecksum(const uint8_t* data, size_t size, uint8_t last_byte);

// Whether the `size` bytes at `data` followed by a 5-byte trailer form an
// uncompressed block whose checksum matches.
bool BlockVerifies(const uint8_t* data, size_t size);

// One key/value of a block, the key whole (prefix compression undone).
struct BlockEntry {
  std::string key;
  std::string value;
};

// The entries of a verified, uncompressed block with RocksDB's usual layout
// (entries, restart array, restart count; the count's top bit is the data
// block index type, binary search = 0). Corruption when it does not parse.
Status ParseBlock(const uint8_t* data, size_t size, std::vector<BlockEntry>* out);

// One entry of an index block (binary search, restart interval 1, as the
// store's tables have it): the separator key (as stored: an internal key
// unless the table's properties say user keys) and the data block's handle.
struct IndexEntry {
  std::string separator;
  Handle block;
};
// The entries of a verified index block of a table of `format_version`
// (from 4 on an entry has no value length). False when it does not parse.
bool ParseIndexBlock(const std::vector<uint8_t>& index, uint32_t format_version,
                     std::vector<IndexEntry>* out);

class TableFile {
 public:
  explicit TableFile(std::string path) : path_(std::move(path)) {}
  ~TableFile();
  TableFile(const TableFile&) = delete;
  TableFile& operator=(const TableFile&) = delete;

  Status Open();
  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }

  Status Read(uint64_t offset, uint64_t n, std::vector<uint8_t>* out);
  // The block at `h` with its trailer checked; its bytes (without the
  // trailer) in *out, its compression type in *compression.
  Status ReadVerifiedBlock(const Handle& h, const char* what, std::vector<uint8_t>* out,
                           uint8_t* compression);
  Status Damaged(const std::string& why) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

struct Footer {
  Handle metaindex, index;
  uint32_t format_version = 0;
  uint8_t checksum_type = 0;
};
// The footer of `file`. Corruption when the file is too short, its magic
// number is not the block-based table's, or a handle does not parse;
// NotSupported for a checksum type or format version this reader does not
// know (the store writes format 5 with XXH3).
Result<Footer> ReadFooter(TableFile& file);
// The same from the footer's kFooterBytes bytes, read from the file at `path`.
Result<Footer> ParseFooter(const uint8_t* bytes, const std::string& path);

// The handle the metaindex block `block` (verified) gives `name`
// ("rocksdb.properties", "rocksdb.range_del", ...), nullopt when absent.
Result<std::optional<Handle>> FindMetaBlock(const std::vector<uint8_t>& block,
                                            const std::string& name, const TableFile& file);

}  // namespace auxstore::store_internal::table_format
