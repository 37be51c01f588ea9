#include "store/table_walk.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "store/table_format.h"

namespace auxstore::store_internal {

using namespace table_format;

namespace {

// A read-only mapping of a whole file.
class MappedFile {
 public:
  ~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
  }
  Status Map(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::IOError("open " + path + ": " + std::strerror(errno));
    const off_t end = ::lseek(fd, 0, SEEK_END);
    if (end > 0) {
      void* p = ::mmap(nullptr, static_cast<size_t>(end), PROT_READ, MAP_PRIVATE, fd, 0);
      if (p == MAP_FAILED) {
        ::close(fd);
        return Status::IOError("map " + path + ": " + std::strerror(errno));
      }
      data_ = static_cast<const uint8_t*>(p);
      size_ = static_cast<size_t>(end);
    }
    ::close(fd);
    return Status::Ok();
  }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// The data block handles of a verified index block; empty when it does not
// parse.
std::vector<Handle> DataBlockHandles(const std::vector<uint8_t>& index, uint32_t format_version) {
  std::vector<IndexEntry> entries;
  std::vector<Handle> out;
  if (!ParseIndexBlock(index, format_version, &entries)) return out;
  for (const IndexEntry& e : entries) out.push_back(e.block);
  return out;
}

// Where the data blocks end and what the verified meta blocks say; every
// part is optional (a damaged footer or metaindex leaves it unknown).
void ReadMeta(const std::string& path, TableWalk* out, std::vector<Handle>* data_blocks) {
  TableFile file(path);
  if (!file.Open().ok()) return;
  auto footer = ReadFooter(file);
  if (!footer.ok()) return;
  out->data_end = std::min(footer->index.offset, footer->metaindex.offset);
  std::vector<uint8_t> meta, block;
  uint8_t compression = 0;
  if (file.ReadVerifiedBlock(footer->index, "index", &block, &compression).ok() &&
      compression == kNoCompression) {
    *data_blocks = DataBlockHandles(block, footer->format_version);
    if (!data_blocks->empty()) out->expected_blocks = data_blocks->size();
  }
  if (!file.ReadVerifiedBlock(footer->metaindex, "metaindex", &meta, &compression).ok()) return;
  std::vector<BlockEntry> handles;
  if (!ParseBlock(meta.data(), meta.size(), &handles).ok()) return;
  out->range_tombstones_known = true;
  for (const BlockEntry& e : handles) {
    const auto* v = reinterpret_cast<const uint8_t*>(e.value.data());
    auto h = DecodeHandle(&v, v + e.value.size());
    if (!h) continue;
    // Filter, properties and range deletion blocks all follow the data.
    out->data_end = std::min(*out->data_end, h->offset);
    const bool props = e.key == "rocksdb.properties";
    const bool range_del = e.key == "rocksdb.range_del";
    if (!props && !range_del) continue;
    std::vector<BlockEntry> entries;
    const bool read = file.ReadVerifiedBlock(*h, e.key.c_str(), &block, &compression).ok() &&
                      compression == kNoCompression &&
                      ParseBlock(block.data(), block.size(), &entries).ok();
    if (range_del && !read) out->range_tombstones_known = false;
    if (!read) continue;
    for (const BlockEntry& x : entries) {
      if (props) {
        const auto* p = reinterpret_cast<const uint8_t*>(x.value.data());
        auto n = Varint(&p, p + x.value.size());
        if (n && x.key == "rocksdb.num.entries") out->expected_entries = *n;
        if (n && x.key == "rocksdb.num.range-deletions") out->expected_range_deletions = *n;
      } else if (x.key.size() >= 8) {
        const uint64_t packed =
            Fixed64(reinterpret_cast<const uint8_t*>(x.key.data()) + x.key.size() - 8);
        out->range_tombstones.push_back({x.key.substr(0, x.key.size() - 8), x.value, packed >> 8});
      }
    }
  }
}

// The size of the data block starting at `at` (without its trailer), found
// by parsing its entries until a restart array ending in the restart count
// and a matching checksum follow them; nullopt when no such end is found
// before `limit`. A restart array starts with offset 0, so only entry
// boundaries followed by four zero bytes are tried.
std::optional<size_t> FindBlockEnd(const uint8_t* base, size_t at, size_t limit) {
  const uint8_t* const start = base + at;
  const uint8_t* const end = base + limit;
  const uint8_t* p = start;
  uint64_t entries = 0;
  uint64_t key_len = 0;
  while (p < end) {
    auto shared = Varint(&p, end);
    auto non_shared = shared ? Varint(&p, end) : std::nullopt;
    auto value_len = non_shared ? Varint(&p, end) : std::nullopt;
    if (!value_len || *shared > key_len || *non_shared > uint64_t(end - p) ||
        *value_len > uint64_t(end - p) - *non_shared) {
      return std::nullopt;
    }
    key_len = *shared + *non_shared;
    p += *non_shared + *value_len;
    ++entries;
    if (uint64_t(end - p) < 4 + 4 + kBlockTrailerBytes || Fixed32(p) != 0) continue;
    for (uint64_t n = 1; n <= entries; ++n) {
      if (uint64_t(end - p) < 4 * n + 4 + kBlockTrailerBytes) break;
      if ((Fixed32(p + 4 * n) & 0x7fffffffu) != n) continue;
      const size_t size = static_cast<size_t>(p + 4 * n + 4 - start);
      if (BlockVerifies(start, size)) return size;
    }
  }
  return std::nullopt;
}

// Whether internal key `b` may follow `a` in a table (user keys ascending,
// then sequence numbers descending).
bool InOrder(std::string_view a_user, uint64_t a_seq, std::string_view b_user, uint64_t b_seq) {
  const int c = a_user.compare(b_user);
  return c < 0 || (c == 0 && a_seq > b_seq);
}

}  // namespace

bool TableWalk::Complete() const {
  if (!reached_data_end || !range_tombstones_known) return false;
  if (damaged_blocks > 0) return false;
  if (expected_entries) return entries + expected_range_deletions.value_or(0) == *expected_entries;
  return expected_blocks && blocks == *expected_blocks;
}

std::string TableWalk::Describe() const {
  std::string s = std::to_string(entries);
  if (expected_entries) {
    s += " of " + std::to_string(*expected_entries - expected_range_deletions.value_or(0)) +
         " entries";
  } else if (expected_blocks) {
    s += " entries in " + std::to_string(blocks) + " of " + std::to_string(*expected_blocks) +
         " data blocks";
  } else {
    s += " entries (neither its properties nor its index block, which count them, reads)";
  }
  if (!stop_reason.empty()) s += "; " + stop_reason;
  if (!range_tombstones_known) s += "; its range deletions are unreadable";
  return s;
}

namespace {

// Hands the entries of verified blocks to the callback, as long as they are
// data block entries in table order.
class Emitter {
 public:
  Emitter(const std::function<Status(const TableEntry&)>& on_entry, TableWalk* out)
      : on_entry_(on_entry), out_(out) {}

  // False when the block is not a data block of this table (the index,
  // read as one after a damaged footer): its keys are not internal keys in
  // order. Nothing of such a block is emitted.
  Result<bool> Block(const uint8_t* data, size_t size) {
    std::vector<BlockEntry> entries;
    if (!ParseBlock(data, size, &entries).ok()) return false;
    std::string last_user = last_user_;
    uint64_t last_seq = last_seq_;
    bool have_last = have_last_;
    for (const BlockEntry& e : entries) {
      const size_t n = e.key.size();
      if (n < 8) return false;
      const uint64_t packed = Fixed64(reinterpret_cast<const uint8_t*>(e.key.data()) + n - 8);
      const auto type = static_cast<uint8_t>(packed & 0xff);
      const std::string_view user = std::string_view(e.key).substr(0, n - 8);
      if ((type != kTypeValue && type != kTypeDeletion && type != kTypeSingleDeletion) ||
          (have_last && !InOrder(last_user, last_seq, user, packed >> 8))) {
        return false;
      }
      last_user.assign(user);
      last_seq = packed >> 8;
      have_last = true;
    }
    for (const BlockEntry& e : entries) {
      const size_t n = e.key.size();
      const uint64_t packed = Fixed64(reinterpret_cast<const uint8_t*>(e.key.data()) + n - 8);
      TableEntry t{std::string_view(e.key).substr(0, n - 8), packed >> 8,
                   static_cast<uint8_t>(packed & 0xff), e.value};
      AUXSTORE_RETURN_IF_ERROR(on_entry_(t));
      ++out_->entries;
    }
    last_user_ = std::move(last_user);
    last_seq_ = last_seq;
    have_last_ = have_last;
    ++out_->blocks;
    return true;
  }

 private:
  const std::function<Status(const TableEntry&)>& on_entry_;
  TableWalk* out_;
  std::string last_user_;
  uint64_t last_seq_ = 0;
  bool have_last_ = false;
};

// The data blocks the index names: a damaged one is skipped, the rest read.
Status WalkByIndex(const MappedFile& file, const std::vector<Handle>& blocks, Emitter& emit,
                   TableWalk* out) {
  std::string skipped;
  for (const Handle& h : blocks) {
    const bool inside = h.offset <= file.size() && h.size <= file.size() - h.offset &&
                        file.size() - h.offset - h.size >= kBlockTrailerBytes;
    bool read = false;
    if (inside && BlockVerifies(file.data() + h.offset, h.size)) {
      AUXSTORE_ASSIGN_OR_RETURN(read, emit.Block(file.data() + h.offset, h.size));
    }
    if (read) continue;
    ++out->damaged_blocks;
    out->damaged_block_handles.emplace_back(h.offset, h.size);
    if (out->damaged_blocks <= 3) skipped += " " + std::to_string(h.offset);
  }
  out->stopped_at = out->data_end.value_or(0);
  out->reached_data_end = true;
  if (out->damaged_blocks > 0) {
    out->stop_reason = std::to_string(out->damaged_blocks) +
                       " damaged data blocks skipped (at offsets" + skipped +
                       (out->damaged_blocks > 3 ? " ...)" : ")");
  }
  return Status::Ok();
}

// No index to go by: the blocks one after the other from offset 0, until
// one does not verify.
Status WalkInSequence(const MappedFile& file, Emitter& emit, TableWalk* out) {
  const size_t limit = out->data_end ? std::min<size_t>(*out->data_end, file.size()) : file.size();
  size_t at = 0;
  while (at < limit) {
    auto size = FindBlockEnd(file.data(), at, limit);
    if (!size) break;
    AUXSTORE_ASSIGN_OR_RETURN(bool read, emit.Block(file.data() + at, *size));
    if (!read) break;
    at += *size + kBlockTrailerBytes;
  }
  out->stopped_at = at;
  out->reached_data_end = out->data_end && at == *out->data_end;
  if (!out->reached_data_end) {
    out->stop_reason =
        "no verified data block at offset " + std::to_string(at) +
        (out->data_end ? " (the data blocks end at " + std::to_string(*out->data_end) +
                             "; the index, which would let the walk skip it, is unreadable)"
                       : " (the footer is unreadable: where the data ends is unknown)");
  }
  return Status::Ok();
}

}  // namespace

Status WalkTable(const std::string& path, const std::function<Status(const TableEntry&)>& on_entry,
                 TableWalk* out) {
  *out = TableWalk();
  std::vector<Handle> data_blocks;
  ReadMeta(path, out, &data_blocks);
  MappedFile file;
  AUXSTORE_RETURN_IF_ERROR(file.Map(path));
  Emitter emit(on_entry, out);
  if (!data_blocks.empty()) return WalkByIndex(file, data_blocks, emit, out);
  return WalkInSequence(file, emit, out);
}

}  // namespace auxstore::store_internal
