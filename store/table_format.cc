#include "store/table_format.h"

#include <fcntl.h>
#include <unistd.h>
#include <xxhash.h>

#include <cerrno>
#include <cstring>

namespace auxstore::store_internal::table_format {

uint32_t Fixed32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

uint64_t Fixed64(const uint8_t* p) { return uint64_t{Fixed32(p)} | uint64_t{Fixed32(p + 4)} << 32; }

std::optional<uint64_t> Varint(const uint8_t** p, const uint8_t* end) {
  uint64_t v = 0;
  for (int shift = 0; shift <= 63 && *p < end; shift += 7) {
    const uint8_t b = *(*p)++;
    v |= uint64_t{b & 0x7fu} << shift;
    if ((b & 0x80) == 0) return v;
  }
  return std::nullopt;
}

std::optional<Handle> DecodeHandle(const uint8_t** p, const uint8_t* end) {
  auto offset = Varint(p, end);
  auto size = offset ? Varint(p, end) : std::nullopt;
  if (!size) return std::nullopt;
  return Handle{*offset, *size};
}

uint32_t BlockChecksum(const uint8_t* data, size_t size, uint8_t last_byte) {
  constexpr uint32_t kRandomPrime = 0x6b9083d9;
  const auto v = static_cast<uint32_t>(XXH3_64bits(data, size));
  return v ^ (uint32_t{last_byte} * kRandomPrime);
}

bool BlockVerifies(const uint8_t* data, size_t size) {
  const uint8_t* trailer = data + size;
  return trailer[0] == kNoCompression &&
         BlockChecksum(data, size, trailer[0]) == Fixed32(trailer + 1);
}

Status ParseBlock(const uint8_t* data, size_t size, std::vector<BlockEntry>* out) {
  if (size < 4) return Status::Corruption("block shorter than its restart count");
  const uint32_t restarts = Fixed32(data + size - 4) & 0x7fffffffu;
  if (restarts == 0 || uint64_t{restarts} * 4 + 4 > size) {
    return Status::Corruption("block restart count out of range");
  }
  const uint8_t* p = data;
  const uint8_t* const end = data + size - 4 - uint64_t{restarts} * 4;
  std::string key;
  while (p < end) {
    auto shared = Varint(&p, end);
    auto non_shared = shared ? Varint(&p, end) : std::nullopt;
    auto value_len = non_shared ? Varint(&p, end) : std::nullopt;
    if (!value_len || *shared > key.size() || *non_shared > uint64_t(end - p) ||
        *value_len > uint64_t(end - p) - *non_shared) {
      return Status::Corruption("block entry does not parse");
    }
    key.resize(*shared);
    key.append(reinterpret_cast<const char*>(p), *non_shared);
    p += *non_shared;
    out->push_back({key, std::string(reinterpret_cast<const char*>(p), *value_len)});
    p += *value_len;
  }
  return Status::Ok();
}

TableFile::~TableFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status TableFile::Open() {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) return Status::IOError("open " + path_ + ": " + std::strerror(errno));
  const off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end < 0) return Status::IOError("size of " + path_ + ": " + std::strerror(errno));
  size_ = static_cast<uint64_t>(end);
  return Status::Ok();
}

Status TableFile::Read(uint64_t offset, uint64_t n, std::vector<uint8_t>* out) {
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

Status TableFile::ReadVerifiedBlock(const Handle& h, const char* what, std::vector<uint8_t>* out,
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

Status TableFile::Damaged(const std::string& why) const {
  return Status::Corruption("table file " + path_ + " is damaged: " + why);
}

Result<Footer> ReadFooter(TableFile& file) {
  if (file.size() < kFooterBytes) return file.Damaged("shorter than a table footer");
  std::vector<uint8_t> bytes;
  AUXSTORE_RETURN_IF_ERROR(file.Read(file.size() - kFooterBytes, kFooterBytes, &bytes));
  return ParseFooter(bytes.data(), file.path());
}

Result<Footer> ParseFooter(const uint8_t* bytes, const std::string& path) {
  auto damaged = [&](const std::string& why) {
    return Status::Corruption("table file " + path + " is damaged: " + why);
  };
  if (Fixed64(bytes + kFooterBytes - 8) != kBlockBasedTableMagic) {
    return damaged("its footer has no block-based table magic number");
  }
  Footer f;
  f.format_version = Fixed32(bytes + kFooterBytes - 12);
  f.checksum_type = bytes[0];
  if (f.format_version < 1 || f.format_version > 5 || f.checksum_type != kChecksumXXH3) {
    return Status::NotSupported("table file " + path + " has format version " +
                                std::to_string(f.format_version) + ", checksum type " +
                                std::to_string(f.checksum_type));
  }
  const uint8_t* p = bytes + 1;
  const uint8_t* const end = bytes + kFooterBytes - 12;
  auto metaindex = DecodeHandle(&p, end);
  auto index = metaindex ? DecodeHandle(&p, end) : std::nullopt;
  if (!index) return damaged("its footer's block handles do not parse");
  f.metaindex = *metaindex;
  f.index = *index;
  return f;
}

bool ParseIndexBlock(const std::vector<uint8_t>& index, uint32_t format_version,
                     std::vector<IndexEntry>* out) {
  out->clear();
  if (index.size() < 4) return false;
  const uint8_t* const base = index.data();
  const uint32_t restarts = Fixed32(base + index.size() - 4) & 0x7fffffffu;
  if (uint64_t{restarts} * 4 + 4 > index.size()) return false;
  const uint8_t* const end = base + index.size() - 4 - uint64_t{restarts} * 4;
  for (uint32_t i = 0; i < restarts; ++i) {
    const uint32_t at = Fixed32(end + 4 * uint64_t{i});
    if (at >= uint64_t(end - base)) return false;
    const uint8_t* p = base + at;
    auto shared = Varint(&p, end);
    auto non_shared = shared ? Varint(&p, end) : std::nullopt;
    if (format_version < 4 && non_shared && !Varint(&p, end)) return false;  // the value length
    if (!non_shared || *shared != 0 || *non_shared > uint64_t(end - p)) return false;
    IndexEntry e;
    e.separator.assign(reinterpret_cast<const char*>(p), *non_shared);
    p += *non_shared;
    auto h = DecodeHandle(&p, end);
    if (!h) return false;
    e.block = *h;
    out->push_back(std::move(e));
  }
  return true;
}

Result<std::optional<Handle>> FindMetaBlock(const std::vector<uint8_t>& block,
                                            const std::string& name, const TableFile& file) {
  std::vector<BlockEntry> entries;
  if (!ParseBlock(block.data(), block.size(), &entries).ok()) {
    return file.Damaged("metaindex block does not parse");
  }
  for (const BlockEntry& e : entries) {
    if (e.key != name) continue;
    const auto* v = reinterpret_cast<const uint8_t*>(e.value.data());
    auto h = DecodeHandle(&v, v + e.value.size());
    if (!h) return file.Damaged(name + " block handle does not parse");
    return std::optional<Handle>(*h);
  }
  return std::optional<Handle>();
}

}  // namespace auxstore::store_internal::table_format
