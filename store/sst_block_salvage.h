// Entries read back out of one damaged SST data block, without RocksDB's
// block parser (which may abort on a malformed block): every bound is
// checked here, and nothing read is trusted until its caller checks it (the
// store's values carry an envelope seeded by their key).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace auxstore::store_internal {

// Where a block is, as RocksDB's "block checksum mismatch" names it
// ("... in FILE offset N size M").
struct BlockHandle {
  std::string file;
  uint64_t offset = 0;
  uint64_t size = 0;  // the block's contents, without its 5-byte trailer
};
std::optional<BlockHandle> DamagedBlockOf(const std::string& rocksdb_message);

struct SalvagedEntry {
  std::string user_key;
  bool is_value = false;  // a Put (else a deletion or another kind)
  uint64_t sequence = 0;
  std::string value;
};
// The entries of the (uncompressed, binary-search) data block `b`, decoded
// restart segment by restart segment; a segment is abandoned where its bytes
// stop making sense. Empty when the file cannot be read.
std::vector<SalvagedEntry> SalvageDataBlock(const BlockHandle& b);

}  // namespace auxstore::store_internal
