#include "store/table_precheck.h"

#include <fcntl.h>
#include <rocksdb/env.h>
#include <rocksdb/file_checksum.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "store/store_dir.h"

// Public in Debian's librocksdb 7.8.3 (the ldb tool's list_file_checksums
// uses it) but declared only in an internal header (file/file_util.h): the
// live table files of a MANIFEST, read without opening any of them.
namespace rocksdb {
Status GetFileChecksumsFromManifest(Env* src_env, const std::string& abs_path,
                                    uint64_t manifest_file_size, FileChecksumList* checksum_list);
}  // namespace rocksdb

namespace auxstore::store_internal {
namespace {

// RocksDB's block-based table format (format_version 1-5, table/format.h).
constexpr uint64_t kBlockBasedTableMagic = 0x88e241b785f4cff7ull;
constexpr size_t kFooterBytes = 53;       // checksum type, 2 handles (padded to 40), version, magic
constexpr size_t kBlockTrailerBytes = 5;  // compression type, fixed32 checksum
constexpr uint8_t kChecksumXXH3 = 4;
constexpr uint8_t kNoCompression = 0;
constexpr const char* kPropertiesBlockName = "rocksdb.properties";

uint32_t Fixed32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t Fixed64(const uint8_t* p) { return uint64_t{Fixed32(p)} | uint64_t{Fixed32(p + 4)} << 32; }

// A varint at [*p, end); advances *p. Nullopt when it runs off the end or
// is longer than a uint64.
std::optional<uint64_t> Varint(const uint8_t** p, const uint8_t* end) {
  uint64_t v = 0;
  for (int shift = 0; shift <= 63 && *p < end; shift += 7) {
    const uint8_t b = *(*p)++;
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return v;
  }
  return std::nullopt;
}

struct Handle {
  uint64_t offset = 0, size = 0;
};

std::optional<Handle> DecodeHandle(const uint8_t** p, const uint8_t* end) {
  auto offset = Varint(p, end);
  auto size = offset ? Varint(p, end) : std::nullopt;
  if (!size) return std::nullopt;
  return Handle{*offset, *size};
}

// The XXH3 block checksum RocksDB writes (table/format.cc
// ComputeBuiltinChecksumWithLastByte): the low 32 bits of XXH3 over the
// block, mixed with the trailer's compression-type byte.
uint32_t BlockChecksum(const uint8_t* data, size_t size, uint8_t last_byte) {
  constexpr uint32_t kRandomPrime = 0x6b9083d9;
  const auto v = static_cast<uint32_t>(XXH3_64bits(data, size));
  return v ^ (uint32_t{last_byte} * kRandomPrime);
}

class TableFile {
 public:
  explicit TableFile(std::string path) : path_(std::move(path)) {}
  ~TableFile() {
    if (fd_ >= 0) ::close(fd_);
  }

  Status Open() {
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) return Status::IOError("open " + path_ + ": " + std::strerror(errno));
    const off_t end = ::lseek(fd_, 0, SEEK_END);
    if (end < 0) return Status::IOError("size of " + path_ + ": " + std::strerror(errno));
    size_ = static_cast<uint64_t>(end);
    return Status::Ok();
  }

  uint64_t size() const { return size_; }

  Status Read(uint64_t offset, uint64_t n, std::vector<uint8_t>* out) {
    if (offset > size_ || n > size_ - offset) {
      return Damaged("a block at " + std::to_string(offset) + "+" + std::to_string(n) +
                     " lies past the end of the file (" + std::to_string(size_) + " bytes)");
    }
    out->resize(n);
    size_t done = 0;
    while (done < n) {
      const ssize_t got = ::pread(fd_, out->data() + done, n - done, offset + done);
      if (got < 0 && errno == EINTR) continue;
      if (got < 0) return Status::IOError("read " + path_ + ": " + std::strerror(errno));
      if (got == 0) return Damaged("it ended while being read");
      done += static_cast<size_t>(got);
    }
    return Status::Ok();
  }

  // The block at `h` with its trailer checked; its bytes in *out.
  Status ReadVerifiedBlock(const Handle& h, const char* what, std::vector<uint8_t>* out,
                           uint8_t* compression) {
    if (h.size > size_) return Damaged(std::string(what) + " block handle is out of range");
    AUXSTORE_RETURN_IF_ERROR(Read(h.offset, h.size + kBlockTrailerBytes, out));
    const uint8_t* trailer = out->data() + h.size;
    if (BlockChecksum(out->data(), h.size, trailer[0]) != Fixed32(trailer + 1)) {
      return Damaged(std::string(what) + " block checksum mismatch");
    }
    *compression = trailer[0];
    out->resize(h.size);
    return Status::Ok();
  }

  Status Damaged(const std::string& why) const {
    return Status::Corruption("table file " + path_ + " is damaged: " + why);
  }

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// The properties block's handle in a metaindex block (restart interval 1:
// every key whole), or nullopt when it names none.
Result<std::optional<Handle>> FindPropertiesHandle(const std::vector<uint8_t>& block,
                                                   const TableFile& file) {
  if (block.size() < 4) return file.Damaged("metaindex block too short");
  const uint32_t restarts = Fixed32(block.data() + block.size() - 4) & 0x7fffffffu;
  if (uint64_t{restarts} * 4 + 4 > block.size()) {
    return file.Damaged("metaindex block restart count out of range");
  }
  const uint8_t* p = block.data();
  const uint8_t* const end = block.data() + block.size() - 4 - uint64_t{restarts} * 4;
  const size_t name_len = std::strlen(kPropertiesBlockName);
  while (p < end) {
    auto shared = Varint(&p, end);
    auto non_shared = shared ? Varint(&p, end) : std::nullopt;
    auto value_len = non_shared ? Varint(&p, end) : std::nullopt;
    if (!value_len || *shared != 0 || *non_shared > uint64_t(end - p) ||
        *value_len > uint64_t(end - p) - *non_shared) {
      return file.Damaged("metaindex block entry does not parse");
    }
    const uint8_t* key = p;
    const uint8_t* value = p + *non_shared;
    p = value + *value_len;
    if (*non_shared == name_len && std::memcmp(key, kPropertiesBlockName, name_len) == 0) {
      const uint8_t* v = value;
      auto h = DecodeHandle(&v, value + *value_len);
      if (!h) return file.Damaged("properties block handle does not parse");
      return std::optional<Handle>(*h);
    }
  }
  return std::optional<Handle>();
}

}  // namespace

Status CheckTablePropertiesBlock(const std::string& table_file) {
  TableFile file(table_file);
  AUXSTORE_RETURN_IF_ERROR(file.Open());
  if (file.size() < kFooterBytes) return file.Damaged("shorter than a table footer");
  std::vector<uint8_t> footer;
  AUXSTORE_RETURN_IF_ERROR(file.Read(file.size() - kFooterBytes, kFooterBytes, &footer));
  if (Fixed64(footer.data() + kFooterBytes - 8) != kBlockBasedTableMagic) {
    return file.Damaged("its footer has no block-based table magic number");
  }
  const uint32_t format_version = Fixed32(footer.data() + kFooterBytes - 12);
  if (format_version < 1 || format_version > 5 || footer[0] != kChecksumXXH3) {
    // Not a layout this check knows (the store writes format 5 with XXH3):
    // leave the file to RocksDB's own checks.
    return Status::Ok();
  }
  const uint8_t* p = footer.data() + 1;
  auto metaindex = DecodeHandle(&p, footer.data() + kFooterBytes - 12);
  if (!metaindex) return file.Damaged("its footer's metaindex handle does not parse");
  std::vector<uint8_t> block;
  uint8_t compression = 0;
  AUXSTORE_RETURN_IF_ERROR(file.ReadVerifiedBlock(*metaindex, "metaindex", &block, &compression));
  if (compression != kNoCompression) return Status::Ok();  // RocksDB writes it uncompressed
  AUXSTORE_ASSIGN_OR_RETURN(std::optional<Handle> properties, FindPropertiesHandle(block, file));
  if (!properties) return Status::Ok();
  return file.ReadVerifiedBlock(*properties, "properties", &block, &compression);
}

Status CheckTablePropertiesBlocks(const std::string& dir) {
  // Only the table files the MANIFEST names: RocksDB never opens the others
  // (a flush or compaction output a crash cut short, which it deletes), and
  // a power cut may leave those with any bytes in them.
  std::string current = ReadCurrent(dir);  // "MANIFEST-000005\n"
  while (!current.empty() && (current.back() == '\n' || current.back() == '\r')) current.pop_back();
  if (current.empty() || current.find('/') != std::string::npos) {
    return Status::Ok();  // the open reports what is wrong
  }
  const std::string manifest = dir + "/" + current;
  if (::access(manifest.c_str(), F_OK) != 0) return Status::Ok();
  std::unique_ptr<rocksdb::FileChecksumList> live(rocksdb::NewFileChecksumList());
  // The size "unknown" (max): with the real size, 7.8.3 asserts (live, so an
  // abort) that the last record ends at it, which a damaged MANIFEST breaks.
  rocksdb::Status rs = rocksdb::GetFileChecksumsFromManifest(
      rocksdb::Env::Default(), manifest, std::numeric_limits<uint64_t>::max(), live.get());
  if (!rs.ok()) return Status::Ok();  // a MANIFEST RocksDB cannot read: its own open refuses
  std::vector<uint64_t> numbers;
  std::vector<std::string> checksums, names;
  if (!live->GetAllFileChecksums(&numbers, &checksums, &names).ok()) return Status::Ok();
  for (uint64_t number : numbers) {
    char name[32];
    std::snprintf(name, sizeof name, "/%06" PRIu64 ".sst", number);
    const std::string file = dir + name;
    if (::access(file.c_str(), F_OK) != 0) continue;  // a blob file, or missing: RocksDB says
    Status s = CheckTablePropertiesBlock(file);
    // A file deleted since the listing (a writer beside a reader) is not damage.
    if (s.code() == StatusCode::kIOError && ::access(file.c_str(), F_OK) != 0) continue;
    AUXSTORE_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

}  // namespace auxstore::store_internal
