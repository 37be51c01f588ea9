#include "store/direct_records.h"

#include <rocksdb/file_system.h>
#include <rocksdb/metadata.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/xxh3.h"
#include "store/bytes.h"
#include "store/table_format.h"
#include "store/table_walk.h"

namespace auxstore::store_internal {

using table_format::BlockEntry;
using table_format::Handle;
using table_format::Varint;

namespace {

// A data block's entries before a multi-KiB record fit in its target size
// (4 KiB: the block is cut once it is reached), so its header is in here.
constexpr uint64_t kBlockHeadBytes = 8u << 10;
// The payload is read in pieces that stay in cache until they are hashed.
constexpr uint64_t kSubReadBytes = 256u << 10;
constexpr size_t kInternalKeySuffix = 8;  // sequence << 8 | type, little-endian

// Reads [offset, offset + n) of `file` into `out`; false on an error or a
// short read (the caller falls back, or calls the table damaged).
bool ReadExactly(rocksdb::FSRandomAccessFile& file, uint64_t offset, uint64_t n, uint8_t* out,
                 rocksdb::IOStatus* error = nullptr) {
  rocksdb::Slice got;
  rocksdb::IOStatus s =
      file.Read(offset, n, rocksdb::IOOptions(), &got, reinterpret_cast<char*>(out), nullptr);
  if (error) *error = s;
  if (!s.ok() || got.size() != n) return false;
  if (got.data() != reinterpret_cast<const char*>(out)) std::memcpy(out, got.data(), n);
  return true;
}

// A table's last bytes, read in one go: its metaindex, properties and
// (for the store's tables) index blocks and the footer lie there, so a
// cold open is one read, not four seeks.
struct TableTail {
  uint64_t at = 0;  // the file offset of bytes[0]
  std::vector<uint8_t> bytes;
};
constexpr uint64_t kTailBytes = 64u << 10;

// The block at `h`, its trailer matching (from `tail` when it holds it);
// nullopt otherwise.
std::optional<std::vector<uint8_t>> ReadVerifiedBlock(rocksdb::FSRandomAccessFile& file,
                                                      uint64_t file_size, const Handle& h,
                                                      const TableTail& tail) {
  // The handles come from the footer, which has no checksum: bounded by the
  // file before any arithmetic, and by a sane block size.
  constexpr uint64_t kMaxMetaBlockBytes = 64u << 20;
  if (h.offset > file_size || h.size > file_size - h.offset ||
      table_format::kBlockTrailerBytes > file_size - h.offset - h.size ||
      h.size > kMaxMetaBlockBytes) {
    return std::nullopt;
  }
  std::vector<uint8_t> block(h.size + table_format::kBlockTrailerBytes);
  if (h.offset >= tail.at) {  // and so it ends inside the file, as the tail does
    const auto from = tail.bytes.begin() + static_cast<std::ptrdiff_t>(h.offset - tail.at);
    std::copy(from, from + static_cast<std::ptrdiff_t>(block.size()), block.begin());
  } else if (!ReadExactly(file, h.offset, block.size(), block.data())) {
    return std::nullopt;
  }
  if (!table_format::BlockVerifies(block.data(), h.size)) return std::nullopt;
  block.resize(h.size);
  return block;
}

std::optional<std::string> Property(const std::vector<BlockEntry>& props, const char* name) {
  for (const BlockEntry& e : props) {
    if (e.key == name) return e.value;
  }
  return std::nullopt;
}

std::optional<uint64_t> VarintProperty(const std::vector<BlockEntry>& props, const char* name) {
  auto v = Property(props, name);
  if (!v) return std::nullopt;
  const auto* p = reinterpret_cast<const uint8_t*>(v->data());
  return Varint(&p, p + v->size());
}

// Where the record of `key` lies in its data block, of which `n` bytes
// from its start are at `block` (`block_size` in all): its entry's value
// at `value_at`, an envelope of `kind` whose payload is `payload_len`
// bytes. Nullopt when the entry is not among them as a value, or its
// envelope header is not whole there or does not check.
struct RecordAt {
  uint64_t value_at = 0, payload_len = 0;
};
std::optional<RecordAt> FindRecord(const uint8_t* block, uint64_t n, uint64_t block_size,
                                   const std::string& key, RecordKind kind) {
  const uint8_t* p = block;
  const uint8_t* const end = block + n;
  std::string entry_key;
  uint64_t value_at = 0, value_len = 0;
  for (;;) {
    auto shared = Varint(&p, end);
    auto non_shared = shared ? Varint(&p, end) : std::nullopt;
    auto len = non_shared ? Varint(&p, end) : std::nullopt;
    if (!len || *shared > entry_key.size() || *non_shared > uint64_t(end - p)) return std::nullopt;
    entry_key.resize(*shared);
    entry_key.append(reinterpret_cast<const char*>(p), *non_shared);
    p += *non_shared;
    if (entry_key.size() == key.size() + kInternalKeySuffix &&
        entry_key.compare(0, key.size(), key) == 0) {
      if (static_cast<uint8_t>(entry_key[key.size()]) != kTypeValue) return std::nullopt;
      value_at = static_cast<uint64_t>(p - block);
      value_len = *len;
      break;
    }
    if (*len > uint64_t(end - p)) return std::nullopt;  // past what was read: not ours
    p += *len;
  }
  // The value and at least a restart point and the restart count in the block.
  if (value_len < kEnvelopeHeaderBytes || value_at + kEnvelopeHeaderBytes > n ||
      value_len > block_size - value_at || block_size - value_at - value_len < 8) {
    return std::nullopt;
  }
  const uint64_t payload_len = value_len - kEnvelopeHeaderBytes;
  uint8_t expected[kEnvelopePrefixBytes];
  EncodeEnvelopePrefix(kind, payload_len, expected);
  if (std::memcmp(block + value_at, expected, sizeof expected) != 0) return std::nullopt;
  return RecordAt{value_at, payload_len};
}

// The record's own checksum: XXH3-64 over [0, 16) of its envelope header,
// then the payload, seeded with the key's hash (envelope.h). `envelope`
// is the header, the payload right after it.
void StartRecordHash(XXH3_state_t* h, const std::string& key, const uint8_t* envelope) {
  XXH3_INITSTATE(h);
  XXH3_64bits_reset_withSeed(h, XXH3_64bits(key.data(), key.size()));
  XXH3_64bits_update(h, envelope, kEnvelopePrefixBytes);
}

}  // namespace

// One table file of the family, opened, its index read: the user key each
// data block's separator starts from, in order, and the block's handle.
struct DirectRecords::Table {
  std::unique_ptr<rocksdb::FSRandomAccessFile> file;
  std::string path;
  uint64_t size = 0;
  std::vector<std::string> separators;  // user keys, ascending
  std::vector<Handle> blocks;

  // Null when the file is gone, damaged where it matters, or written with
  // options this reader does not read (compression, another index or
  // comparator): RocksDB reads those.
  static std::shared_ptr<Table> Open(rocksdb::FileSystem& fs, const std::string& path) {
    auto t = std::make_shared<Table>();
    t->path = path;
    rocksdb::FileOptions fo;
    if (!fs.NewRandomAccessFile(path, fo, &t->file, nullptr).ok()) return nullptr;
    if (!fs.GetFileSize(path, rocksdb::IOOptions(), &t->size, nullptr).ok()) return nullptr;
    if (t->size < table_format::kFooterBytes) return nullptr;
    TableTail tail;
    tail.at = t->size - std::min(t->size, kTailBytes);
    tail.bytes.resize(t->size - tail.at);
    if (!ReadExactly(*t->file, tail.at, tail.bytes.size(), tail.bytes.data())) return nullptr;
    auto footer = table_format::ParseFooter(
        tail.bytes.data() + tail.bytes.size() - table_format::kFooterBytes, path);
    if (!footer.ok()) return nullptr;

    auto metaindex = ReadVerifiedBlock(*t->file, t->size, footer->metaindex, tail);
    std::vector<BlockEntry> meta;
    if (!metaindex || !table_format::ParseBlock(metaindex->data(), metaindex->size(), &meta).ok()) {
      return nullptr;
    }
    auto props_handle_bytes = Property(meta, "rocksdb.properties");
    if (!props_handle_bytes) return nullptr;
    const auto* hp = reinterpret_cast<const uint8_t*>(props_handle_bytes->data());
    auto props_handle = table_format::DecodeHandle(&hp, hp + props_handle_bytes->size());
    if (!props_handle) return nullptr;
    auto props_block = ReadVerifiedBlock(*t->file, t->size, *props_handle, tail);
    std::vector<BlockEntry> props;
    if (!props_block ||
        !table_format::ParseBlock(props_block->data(), props_block->size(), &props).ok()) {
      return nullptr;
    }
    // A binary-search index (type 0, a fixed32), no compression, bytewise keys.
    if (Property(props, "rocksdb.block.based.table.index.type") != std::string(4, '\0') ||
        Property(props, "rocksdb.compression") != "NoCompression" ||
        Property(props, "rocksdb.comparator") != "leveldb.BytewiseComparator") {
      return nullptr;
    }
    auto user_key_index = VarintProperty(props, "rocksdb.index.key.is.user.key");
    if (!user_key_index) return nullptr;

    auto index = ReadVerifiedBlock(*t->file, t->size, footer->index, tail);
    if (!index) return nullptr;
    std::vector<table_format::IndexEntry> entries;
    if (!table_format::ParseIndexBlock(*index, footer->format_version, &entries)) return nullptr;
    for (table_format::IndexEntry& e : entries) {
      if (*user_key_index == 0) {
        if (e.separator.size() < kInternalKeySuffix) return nullptr;
        e.separator.resize(e.separator.size() - kInternalKeySuffix);
      }
      t->separators.push_back(std::move(e.separator));
      t->blocks.push_back(e.block);
    }
    return t;
  }

  // The data block that holds `key` if this table does: the first whose
  // separator is at or after it.
  std::optional<Handle> BlockFor(const std::string& key) const {
    auto it = std::lower_bound(separators.begin(), separators.end(), key);
    if (it == separators.end()) return std::nullopt;
    return blocks[it - separators.begin()];
  }
};

DirectRecords::DirectRecords(rocksdb::DB* db, rocksdb::ColumnFamilyHandle* records)
    : db_(db), records_(records) {}

DirectRecords::~DirectRecords() = default;

std::vector<uint8_t> DirectRecords::TakeBuffer(uint64_t bytes) {
  std::vector<uint8_t> b;
  {
    std::lock_guard lock(buffers_mu_);
    if (!buffers_.empty()) {
      b = std::move(buffers_.back());
      buffers_.pop_back();
    }
  }
  if (b.size() < bytes) b.resize(bytes);  // zeroed once, then reused
  return b;
}

void DirectRecords::GiveBuffer(std::vector<uint8_t> b) {
  if (b.empty()) return;
  std::lock_guard lock(buffers_mu_);
  if (buffers_.size() < kKeptBuffers && b.size() <= kKeptBufferBytes)
    buffers_.push_back(std::move(b));
}

// RocksDB's metadata is fetched outside mu_ (it takes the DB mutex, and
// the deletion listener takes mu_), then installed under it.
void DirectRecords::InstallFilesLocked(const rocksdb::ColumnFamilyMetaData& meta,
                                       uint64_t super_version) {
  levels_.clear();
  std::map<uint64_t, std::shared_ptr<Table>> kept;
  for (const rocksdb::LevelMetaData& level : meta.levels) {
    if (level.files.empty()) continue;
    Level& l = levels_.emplace_back();
    l.overlapping = level.level == 0;
    for (const rocksdb::SstFileMetaData& f : level.files) {
      File file;
      file.number = f.file_number;
      file.path = f.db_path + (f.name.starts_with('/') ? "" : "/") + f.name;
      file.smallest = f.smallestkey;
      file.largest = f.largestkey;
      if (auto it = tables_.find(file.number); it != tables_.end()) kept.insert(*it);
      l.files.push_back(std::move(file));
    }
    if (!l.overlapping) {
      std::sort(l.files.begin(), l.files.end(),
                [](const File& a, const File& b) { return a.smallest < b.smallest; });
    }
  }
  tables_ = std::move(kept);  // a compacted-away file closes with its last reader
  files_version_ = super_version;
}

void DirectRecords::Forget(const std::string& path) {
  // RocksDB names a table file NNNNNN.sst.
  const size_t slash = path.find_last_of('/');
  const std::string name = path.substr(slash == std::string::npos ? 0 : slash + 1);
  if (!name.ends_with(".sst")) return;
  uint64_t number = 0;
  for (size_t i = 0; i + 4 < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return;
    number = number * 10 + uint64_t(name[i] - '0');
  }
  std::shared_ptr<Table> closing;  // closed outside the lock
  std::lock_guard lock(mu_);
  auto it = tables_.find(number);
  if (it == tables_.end()) return;
  closing = std::move(it->second);
  tables_.erase(it);
}

bool DirectRecords::ReadByRocksDB(const std::string& key) {
  // RocksDB's lookup that reads no file: false when a memtable holds a
  // deletion of the key (an iterator at kMemtableTier hides deletions, and
  // a Get ignores that tier in 7.8.3); the value when it is in a memtable
  // or the block cache.
  rocksdb::ReadOptions r;
  r.fill_cache = false;
  thread_local std::string value;  // what it finds is copied here (7.8.3)
  bool found = false;
  return !db_->KeyMayExist(r, records_, key, &value, &found) || found;
}

DirectRecords::Located DirectRecords::Locate(const std::string& key) {
  uint64_t super_version = 0;
  if (!db_->GetIntProperty(records_, "rocksdb.current-super-version-number", &super_version)) {
    return {};
  }
  bool stale;
  {
    std::lock_guard lock(mu_);
    stale = super_version != files_version_;
  }
  if (stale) {
    rocksdb::ColumnFamilyMetaData meta;
    db_->GetColumnFamilyMetaData(records_, &meta);
    std::lock_guard lock(mu_);
    if (super_version != files_version_) InstallFilesLocked(meta, super_version);
  }
  // The file to read: found under mu_, opened (the first time) outside it.
  for (int attempt = 0; attempt < 2; ++attempt) {
    const File* wanted = nullptr;
    File to_open;
    {
      std::lock_guard lock(mu_);
      // The first file holding the key holds its newest value: level 0's
      // files newest first, then one file per level (theirs do not overlap).
      for (const Level& level : levels_) {
        auto first = level.files.begin();
        auto last = level.files.end();
        if (!level.overlapping) {
          first = std::lower_bound(
              first, last, key, [](const File& f, const std::string& k) { return f.largest < k; });
          if (first != last) last = first + 1;
        }
        for (auto f = first; f != last && !wanted; ++f) {
          if (key >= f->smallest && key <= f->largest) wanted = &*f;
        }
        if (wanted) break;
      }
      if (!wanted) return {};
      auto it = tables_.find(wanted->number);
      if (it != tables_.end()) {
        if (!it->second) return {};  // not ours to read
        if (auto block = it->second->BlockFor(key)) return {it->second, block->offset, block->size};
        return {};  // RocksDB reads on into the deeper levels; so does the fall back
      }
      to_open = *wanted;
    }
    std::shared_ptr<Table> t = Table::Open(*db_->GetFileSystem(), to_open.path);
    std::lock_guard lock(mu_);
    // Bounded: each open table holds a descriptor besides RocksDB's own.
    if (tables_.size() >= kMaxOpenTables) tables_.erase(tables_.begin());
    tables_.emplace(to_open.number, std::move(t));
  }
  return {};
}

Result<DirectRecords::Outcome> DirectRecords::ReadRange(const std::string& key, RecordKind kind,
                                                        uint64_t offset, std::span<uint8_t> dst,
                                                        Check check, LayerHasher* layer_hash,
                                                        Stream* stream) {
  if (!enabled_.load() || ReadByRocksDB(key)) return Outcome::kFallBack;
  const Located at = Locate(key);
  if (!at.table) return Outcome::kFallBack;
  rocksdb::FSRandomAccessFile& file = *at.table->file;

  // A piece under kOwnBlockBytes may be of a record that shares its block
  // with other entries, whose damage RocksDB's read and the scrub find by
  // the block's checksum: it is taken from one read of the whole block,
  // checked as RocksDB checks it.
  if (dst.size() < kOwnBlockBytes && at.block_size <= kOneReadBytes) {
    thread_local std::vector<uint8_t> block;  // kept: no page faults per read
    AUXSTORE_ASSIGN_OR_RETURN(
        std::optional<ByteSpan> got,
        ReadWholeBlock(key, kind, at, offset, dst.size(), &block, layer_hash, dst));
    return got ? Outcome::kRead : Outcome::kFallBack;
  }

  // The block's head: the entries before the record, and its envelope header.
  if (at.block_offset > at.table->size || at.block_size > at.table->size - at.block_offset) {
    return Outcome::kFallBack;
  }
  const uint64_t head_bytes = std::min(at.block_size, kBlockHeadBytes);
  uint8_t head[kBlockHeadBytes];
  if (!ReadExactly(file, at.block_offset, head_bytes, head)) return Outcome::kFallBack;
  const auto found = FindRecord(head, head_bytes, at.block_size, key, kind);
  // A record under kOwnBlockBytes in a block too large to read whole.
  if (!found || found->payload_len < kOwnBlockBytes) return Outcome::kFallBack;
  const uint64_t value_at = found->value_at, payload_len = found->payload_len;
  if (offset > payload_len || dst.size() > payload_len - offset) return Outcome::kFallBack;
  XXH3_state_t record_hash;
  std::optional<LayerHasher> layer_hash_before;  // restored on a fall back
  if (check == Check::kRecordChecksum) {
    if (offset != 0 || dst.size() != payload_len) return Outcome::kFallBack;
    if (layer_hash) layer_hash_before.emplace(*layer_hash);
    StartRecordHash(&record_hash, key, head + value_at);
  }

  // The wanted bytes' offset in the block; what of them the head holds is
  // taken from there.
  const uint64_t wanted_at = value_at + kEnvelopeHeaderBytes + offset;
  const uint64_t in_head =
      wanted_at < head_bytes ? std::min<uint64_t>(head_bytes - wanted_at, dst.size()) : 0;
  auto hash = [&](const uint8_t* bytes, uint64_t n) {
    if (check == Check::kRecordChecksum) XXH3_64bits_update(&record_hash, bytes, n);
    if (layer_hash) layer_hash->Update(ByteSpan(bytes, n));
  };
  // A stream of its own gets a file handle of its own: the kernel keeps its
  // readahead per open file, and two lanes reading two layers of one table
  // through one handle defeat it (cold restores 0.5 against 0.9 x raw read
  // through their own, bench/RESULTS.md).
  rocksdb::FSRandomAccessFile* payload_file = &file;
  if (stream != nullptr && in_head < dst.size()) {
    if (stream->table != at.table) {
      stream->file.reset();
      stream->table = at.table;
      rocksdb::FileOptions fo;
      if (!db_->GetFileSystem()
               ->NewRandomAccessFile(at.table->path, fo, &stream->file, nullptr)
               .ok()) {
        stream->table.reset();
        return Outcome::kFallBack;
      }
    }
    payload_file = stream->file.get();
  }
  if (in_head > 0) {
    std::memcpy(dst.data(), head + wanted_at, in_head);
    hash(dst.data(), in_head);
  }
  uint64_t from = at.block_offset + wanted_at + in_head;
  for (uint64_t done = in_head; done < dst.size();) {
    const uint64_t n = std::min<uint64_t>(kSubReadBytes, dst.size() - done);
    rocksdb::IOStatus error;
    if (!ReadExactly(*payload_file, from, n, dst.data() + done, &error)) {
      // Not damage by itself: an I/O error, or a file that got shorter
      // since it was opened here (its handle is dropped, so the next read
      // opens it again and, the block past its end, goes to RocksDB).
      const std::string why = error.ok() ? "it ended inside the record" : error.ToString();
      if (error.ok()) Forget(at.table->path);
      return Status::IOError("read chunk record bytes " + std::to_string(offset) + "+" +
                             std::to_string(dst.size()) + " from table file " + at.table->path +
                             ": " + why);
    }
    hash(dst.data() + done, n);
    done += n;
    from += n;
  }
  if (check == Check::kRecordChecksum &&
      XXH3_64bits_digest(&record_hash) !=
          internal::GetLE64(head + value_at + kEnvelopePrefixBytes)) {
    if (layer_hash) *layer_hash = std::move(*layer_hash_before);
    return Outcome::kFallBack;  // RocksDB's read names the damage
  }
  reads_.fetch_add(1, std::memory_order_relaxed);
  return Outcome::kRead;
}

Result<std::optional<ByteSpan>> DirectRecords::ReadRecord(const std::string& key, RecordKind kind,
                                                          uint64_t offset, uint64_t bytes,
                                                          std::vector<uint8_t>* buffer,
                                                          LayerHasher* layer_hash) {
  if (!enabled_.load() || ReadByRocksDB(key)) return std::optional<ByteSpan>();
  return ReadWholeBlock(key, kind, Locate(key), offset, bytes, buffer, layer_hash, {});
}

Result<std::optional<ByteSpan>> DirectRecords::ReadWholeBlock(
    const std::string& key, RecordKind kind, const Located& at, uint64_t offset, uint64_t bytes,
    std::vector<uint8_t>* buffer, LayerHasher* layer_hash, std::span<uint8_t> copy_to) {
  const uint64_t with_trailer = at.block_size + table_format::kBlockTrailerBytes;
  if (!at.table || at.block_offset > at.table->size ||
      with_trailer > at.table->size - at.block_offset || at.block_size > kOneReadBytes) {
    return std::optional<ByteSpan>();
  }
  if (buffer->size() < with_trailer) buffer->resize(with_trailer);
  rocksdb::IOStatus error;
  if (!ReadExactly(*at.table->file, at.block_offset, with_trailer, buffer->data(), &error)) {
    // An I/O error is returned (nothing was hashed). A file that got
    // shorter is left to RocksDB, which names what it finds; this reader
    // opens it again the next time.
    if (!error.ok()) {
      return Status::IOError("read the data block of a chunk record from table file " +
                             at.table->path + ": " + error.ToString());
    }
    Forget(at.table->path);
    return std::optional<ByteSpan>();
  }
  // The block's checksum, as RocksDB's read checks it: damage anywhere in
  // the block (another record's bytes) fails this read as it fails
  // RocksDB's and the scrub's.
  if (!table_format::BlockVerifies(buffer->data(), at.block_size)) return std::optional<ByteSpan>();
  const auto found = FindRecord(buffer->data(), at.block_size, at.block_size, key, kind);
  if (!found) return std::optional<ByteSpan>();
  // The record's own checksum (and the range inside its payload), the
  // range copied to `copy_to` in the same pass; a mismatch is RocksDB's
  // read to name. Only then is the layer digest fed.
  const ByteSpan value(buffer->data() + found->value_at, kEnvelopeHeaderBytes + found->payload_len);
  auto decoded = copy_to.empty() ? DecodeEnvelopeRange(Bytes(key), value, offset, bytes, nullptr)
                                 : DecodeEnvelopeRange(Bytes(key), value, offset, copy_to, nullptr);
  if (!decoded.ok()) return std::optional<ByteSpan>();
  const ByteSpan wanted = copy_to.empty() ? decoded->payload.subspan(offset, bytes) : copy_to;
  if (layer_hash) layer_hash->Update(wanted);
  reads_.fetch_add(1, std::memory_order_relaxed);
  return std::optional<ByteSpan>(wanted);
}

}  // namespace auxstore::store_internal
