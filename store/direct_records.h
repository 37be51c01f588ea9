// Chunk records read straight out of the records family's table files, the
// wanted payload bytes landing in the caller's memory: one pass over each
// byte (the kernel's copy out of the page cache), the layer digest hashing
// it right behind, a sub-read at a time, while it is still in cache.
// RocksDB's block read instead reads the whole block into a buffer of its
// own, checks its XXH3 trailer over every byte, and the reader copies the
// payload out: three passes (bench/RESULTS.md, issue 25).
//
// What is checked here, and what is not. The index and properties blocks
// are trusted only once their XXH3 trailers match. A data block's trailer
// is not checked (that would be a second hash pass over the payload); what
// is read of it is checked field by field: the entry's internal key is the
// record's, its type a value, its envelope header the right magic, version,
// kind, flags and length, the wanted range inside the payload. The payload
// bytes themselves are covered by the layer digest the caller compares at
// the layer's end (LayerReader, PieceChecks::kLayerDigest), and on a
// mismatch the caller decodes every record again through RocksDB, whose
// block checksum and the record's own checksum name the damage.
//
// Level 0's files are searched newest first, then each level in turn: the
// first file that holds the key holds its newest value, as RocksDB would
// find it (a record's key is written once: put ids are not reused).
//
// Anything this reader does not understand is not an error but a fall
// back to RocksDB, before any byte is read into the caller's memory: a
// record (or its deletion) still in a memtable, a table file compacted
// away, a table written with other options, a record sharing the head of
// its block with entries longer than the head read, a header that does
// not check.
//
// A stream's pieces (ReadRecord) are read with one read of their whole
// data block instead, into a buffer of the reader's, and checked against
// the record's own checksum before they are handed on.
#pragma once

#include <rocksdb/db.h>
#include <rocksdb/file_system.h>
#include <rocksdb/listener.h>
#include <rocksdb/metadata.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "auxstore/manifest_types.h"
#include "auxstore/status.h"
#include "format/envelope.h"

namespace auxstore::store_internal {

class DirectRecords {
 public:
  // `records`: the column family of chunk records. Both outlive this.
  DirectRecords(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* records);
  ~DirectRecords();
  DirectRecords(const DirectRecords&) = delete;
  DirectRecords& operator=(const DirectRecords&) = delete;

  // One reader's sequence of reads (a layer's pieces, in order): they read
  // through a handle of their own on the table file.
  struct Stream {
    std::shared_ptr<const void> table;  // the table `file` reads
    std::unique_ptr<rocksdb::FSRandomAccessFile> file;
  };
  // A layer at least this size gets a Stream (an open per layer costs
  // nothing beside its bytes).
  static constexpr uint64_t kStreamBytes = 4u << 20;

  // A record this size and more ends its data block (a block is cut once
  // it holds 4 KiB). ReadRange takes a piece under this size only from a
  // block it read whole (up to kOneReadBytes) and whose checksum matched,
  // as ReadRecord does: its record may share the block with other
  // entries, and damage in them fails RocksDB's read and the scrub, and so
  // must fail this one.
  static constexpr uint64_t kOwnBlockBytes = 64u << 10;

  enum class Outcome { kRead, kFallBack };
  // How the bytes read are checked. kLayerDigest: fed to the caller's layer
  // hash, which the caller compares at the layer's end (the reads into
  // caller memory). kRecordChecksum: the whole payload is read and checked
  // against the record's own checksum before the read returns (a stream's
  // views, handed on before the layer's end); a mismatch is a fall back,
  // RocksDB's read naming the damage.
  enum class Check { kLayerDigest, kRecordChecksum };
  // Reads payload[offset, offset + dst.size()) of the chunk record stored
  // under `key` (a record of kind `kind`) into `dst`, feeding those bytes
  // to `layer_hash` in order. kFallBack: nothing was fed to the hash
  // (though `dst` may be written); read it through RocksDB, which also
  // decides what a header that does not check or (kRecordChecksum) a
  // checksum mismatch met here is. IOError (never Corruption: nothing is
  // quarantined for it) when the payload's read fails or comes up short
  // after the header checked; `dst` and `layer_hash` then hold partial
  // bytes. `stream`: the caller's (or null: the table's shared handle).
  // With kRecordChecksum only a whole payload (offset 0, dst its size) is
  // read here, checked against the record's own checksum.
  Result<Outcome> ReadRange(const std::string& key, RecordKind kind, uint64_t offset,
                            std::span<uint8_t> dst, Check check, LayerHasher* layer_hash,
                            Stream* stream = nullptr);

  // Payload bytes [offset, offset + bytes) of the chunk record under `key`
  // (a record of kind `kind`), its data block read whole with one read
  // into `buffer` (grown as needed), the block's checksum and then the
  // whole record's own checked before the wanted bytes are fed to
  // `layer_hash`: a span inside `buffer`. Nullopt for a fall back, as
  // ReadRange's kFallBack (nothing was hashed), and for a block over
  // kOneReadBytes or one the file no longer holds whole. IOError when the
  // block's read fails. For a stream's pieces under a mebibyte: one read
  // per block, as RocksDB reads it, without its iterator and copy. The
  // block's head and then its payload, read one after the other, measured
  // 0.21 against 0.55 x raw read cold for a stream of 256 KiB layers
  // (bench/RESULTS.md).
  static constexpr uint64_t kOneReadBytes = 1u << 20;
  Result<std::optional<ByteSpan>> ReadRecord(const std::string& key, RecordKind kind,
                                             uint64_t offset, uint64_t bytes,
                                             std::vector<uint8_t>* buffer, LayerHasher* layer_hash);

  // Buffers for views of pieces read here (a stream's reader holds one
  // until it goes): a few are kept, so a layer's read faults no fresh pages.
  std::vector<uint8_t> TakeBuffer(uint64_t bytes);
  void GiveBuffer(std::vector<uint8_t> b);

  // Closes this reader's handle on a table file RocksDB deleted (its space
  // is freed at once, not at the next read): TableDeletions calls it.
  void Forget(const std::string& path);

  // Tests: pieces read here, and a switch to send every read to RocksDB.
  uint64_t reads() const { return reads_.load(); }
  void set_enabled(bool on) { enabled_.store(on); }
  bool enabled() const { return enabled_.load(); }

 private:
  struct Table;
  struct File {
    uint64_t number = 0;
    std::string path, smallest, largest;  // user keys
  };
  struct Located {
    std::shared_ptr<Table> table;
    uint64_t block_offset = 0, block_size = 0;
  };

  // Whether RocksDB answers for `key` without reading a table file: a
  // memtable holds its newest value or a deletion of it, its block is in
  // the block cache, or no file can hold it. RocksDB then reads it (or
  // finds it gone: a record deleted under its manifest is a torn
  // snapshot, not the old bytes from its file).
  bool ReadByRocksDB(const std::string& key);
  // The table file and data block holding `key` in the family's current
  // files; an empty table when none does (or none can be read here).
  Located Locate(const std::string& key);
  // ReadRecord's read of the block `at` (Locate's for `key`); with
  // `copy_to` (`bytes` long) the wanted bytes are copied there too, and
  // the span returned is it.
  Result<std::optional<ByteSpan>> ReadWholeBlock(const std::string& key, RecordKind kind,
                                                 const Located& at, uint64_t offset, uint64_t bytes,
                                                 std::vector<uint8_t>* buffer,
                                                 LayerHasher* layer_hash,
                                                 std::span<uint8_t> copy_to);
  void InstallFilesLocked(const rocksdb::ColumnFamilyMetaData& meta, uint64_t super_version);

  rocksdb::DB* const db_;
  rocksdb::ColumnFamilyHandle* const records_;
  std::atomic<bool> enabled_{true};
  std::atomic<uint64_t> reads_{0};

  static constexpr size_t kMaxOpenTables = 64;
  static constexpr size_t kKeptBuffers = 4;
  static constexpr uint64_t kKeptBufferBytes = 16u << 20;
  std::mutex buffers_mu_;
  std::vector<std::vector<uint8_t>> buffers_;

  std::mutex mu_;
  uint64_t files_version_ = ~uint64_t{0};  // RocksDB's super version the list is of
  struct Level {
    bool overlapping = false;  // level 0: newest first; others sorted by key
    std::vector<File> files;
  };
  std::vector<Level> levels_;  // the non-empty levels, top down
  // Opened tables by file number; null for a file this reader cannot read.
  std::map<uint64_t, std::shared_ptr<Table>> tables_;
};

// Tells the store's DirectRecords (while one is attached) of every table
// file RocksDB deletes. Registered with RocksDB before the open; RocksDB
// calls it without its DB mutex held.
class TableDeletions : public rocksdb::EventListener {
 public:
  void Attach(DirectRecords* target) {
    std::lock_guard lock(mu_);
    target_ = target;
  }
  void OnTableFileDeleted(const rocksdb::TableFileDeletionInfo& info) override {
    std::lock_guard lock(mu_);
    if (target_) target_->Forget(info.file_path);
  }

 private:
  std::mutex mu_;
  DirectRecords* target_ = nullptr;
};

}  // namespace auxstore::store_internal
