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

// Where the data blocks end and what the verified meta blocks say; every
// part is optional (a damaged footer or metaindex leaves it unknown).
void ReadMeta(const std::string& path, TableWalk* out) {
  TableFile file(path);
  if (!file.Open().ok()) return;
  auto footer = ReadFooter(file);
  if (!footer.ok()) return;
  out->data_end = std::min(footer->index.offset, footer->metaindex.offset);
  std::vector<uint8_t> meta, block;
  uint8_t compression = 0;
  // The index's restart interval is 1: its restart count is its entry count.
  if (file.ReadVerifiedBlock(footer->index, "index", &block, &compression).ok() &&
      block.size() >= 4) {
    out->expected_blocks = Fixed32(block.data() + block.size() - 4) & 0x7fffffffu;
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

Status WalkTable(const std::string& path, const std::function<Status(const TableEntry&)>& on_entry,
                 TableWalk* out) {
  *out = TableWalk();
  ReadMeta(path, out);
  MappedFile file;
  AUXSTORE_RETURN_IF_ERROR(file.Map(path));
  const size_t limit = out->data_end ? std::min<size_t>(*out->data_end, file.size()) : file.size();
  size_t at = 0;
  std::string last_user;
  uint64_t last_seq = 0;
  bool have_last = false;
  while (at < limit) {
    auto size = FindBlockEnd(file.data(), at, limit);
    std::vector<BlockEntry> entries;
    if (!size || !ParseBlock(file.data() + at, *size, &entries).ok()) break;
    // A verified block that is not a data block (the index, after a
    // damaged footer): its keys are not internal keys in order.
    bool data_block = true;
    for (const BlockEntry& e : entries) {
      const size_t n = e.key.size();
      const uint64_t packed =
          n >= 8 ? Fixed64(reinterpret_cast<const uint8_t*>(e.key.data()) + n - 8) : 0;
      const uint8_t type = static_cast<uint8_t>(packed & 0xff);
      if (n < 8 || (type != kTypeValue && type != kTypeDeletion && type != kTypeSingleDeletion) ||
          (have_last &&
           !InOrder(last_user, last_seq, std::string_view(e.key).substr(0, n - 8), packed >> 8))) {
        data_block = false;
        break;
      }
      last_user.assign(e.key, 0, n - 8);
      last_seq = packed >> 8;
      have_last = true;
    }
    if (!data_block) break;
    for (const BlockEntry& e : entries) {
      const size_t n = e.key.size();
      const uint64_t packed = Fixed64(reinterpret_cast<const uint8_t*>(e.key.data()) + n - 8);
      TableEntry t{std::string_view(e.key).substr(0, n - 8), packed >> 8,
                   static_cast<uint8_t>(packed & 0xff), e.value};
      AUXSTORE_RETURN_IF_ERROR(on_entry(t));
      ++out->entries;
    }
    ++out->blocks;
    at += *size + kBlockTrailerBytes;
  }
  out->stopped_at = at;
  // The index counts the data blocks when the metaindex, which says where
  // the filter after them starts, is damaged.
  out->reached_data_end = (out->data_end && at == *out->data_end) ||
                          (out->expected_blocks && out->blocks == *out->expected_blocks);
  if (!out->reached_data_end) {
    out->stop_reason =
        "no verified data block at offset " + std::to_string(at) +
        (out->data_end ? " (the data blocks end at " + std::to_string(*out->data_end) + ")"
                       : " (the footer is unreadable: where the data ends is "
                         "unknown)");
  }
  return Status::Ok();
}

}  // namespace auxstore::store_internal
