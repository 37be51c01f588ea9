#include "store/manifest_tail.h"

#include <boost/crc.hpp>
#include <fstream>
#include <iterator>

namespace auxstore::store_internal {
namespace {

// RocksDB's log format (db/log_format.h, util/crc32c.h).
constexpr uint64_t kBlockBytes = 32768;
constexpr uint64_t kHeaderBytes = 7;  // masked crc32c (4), length (2), type (1)
enum RecordType : uint8_t {
  kZeroType = 0,
  kFullType = 1,
  kFirstType = 2,
  kMiddleType = 3,
  kLastType = 4
};
constexpr uint32_t kMaskDelta = 0xa282ead8u;

using Crc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

uint32_t MaskedCrc(const uint8_t* p, size_t n) {
  Crc32c crc;
  crc.process_bytes(p, n);
  const uint32_t c = crc.checksum();
  return ((c >> 15) | (c << 17)) + kMaskDelta;
}

uint32_t Fixed32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

struct Header {
  uint32_t crc;
  uint64_t length;
  uint8_t type;
};

Header HeaderAt(const uint8_t* p) {
  return Header{Fixed32(p), uint64_t{p[4]} | uint64_t{p[5]} << 8, p[6]};
}

// Whether a complete physical record with a matching checksum starts at `pos`.
bool ValidRecordAt(std::string_view bytes, uint64_t pos) {
  const uint64_t in_block = pos % kBlockBytes;
  if (kBlockBytes - in_block < kHeaderBytes || pos + kHeaderBytes > bytes.size()) return false;
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data()) + pos;
  const Header h = HeaderAt(p);
  if (h.type < kFullType || h.type > kLastType) return false;
  if (in_block + kHeaderBytes + h.length > kBlockBytes) return false;
  if (pos + kHeaderBytes + h.length > bytes.size()) return false;
  return MaskedCrc(p + 6, 1 + h.length) == h.crc;
}

ManifestTailScan Damaged(std::string_view bytes, uint64_t bad_at, uint64_t valid_end,
                         const std::string& what) {
  ManifestTailScan scan;
  scan.file_bytes = bytes.size();
  scan.valid_bytes = valid_end;
  for (uint64_t pos = bad_at; pos < bytes.size(); ++pos) {
    if (ValidRecordAt(bytes, pos)) {
      scan.verdict = ManifestTailScan::Verdict::kBrokenMiddle;
      scan.why = what + " at byte " + std::to_string(bad_at) + ", and a valid record follows at " +
                 std::to_string(pos);
      return scan;
    }
  }
  scan.verdict = ManifestTailScan::Verdict::kBrokenTail;
  scan.why = what + " at byte " + std::to_string(bad_at) + "; nothing valid follows";
  return scan;
}

}  // namespace

// Walks the records as RocksDB's log::Reader does and stops at the first one
// it would report as corruption. What it tolerates (a record or header cut
// off by the end of the file, zero-filled preallocated space) is intact.
ManifestTailScan ScanManifestBytes(std::string_view bytes) {
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  uint64_t pos = 0;
  uint64_t valid_end = 0;
  bool in_fragment = false;
  while (pos < bytes.size()) {
    const uint64_t in_block = pos % kBlockBytes;
    if (kBlockBytes - in_block < kHeaderBytes) {  // the block's zero trailer
      pos += kBlockBytes - in_block;
      continue;
    }
    if (pos + kHeaderBytes > bytes.size()) break;  // a header cut off by the end
    const Header h = HeaderAt(data + pos);
    if (pos + kHeaderBytes + h.length > bytes.size()) break;  // a record cut off by the end
    if (h.type == kZeroType && h.length == 0) {  // preallocated space: the block's rest
      if (in_fragment) return Damaged(bytes, pos, valid_end, "zeros inside a fragmented record");
      pos += kBlockBytes - in_block;
      continue;
    }
    if (in_block + kHeaderBytes + h.length > kBlockBytes) {
      return Damaged(bytes, pos, valid_end, "a record length past its block");
    }
    if (h.type < kFullType || h.type > kLastType) {
      return Damaged(bytes, pos, valid_end, "an unknown record type");
    }
    if (MaskedCrc(data + pos + 6, 1 + h.length) != h.crc) {
      return Damaged(bytes, pos, valid_end, "a checksum mismatch");
    }
    const bool starts = h.type == kFullType || h.type == kFirstType;
    if (starts == in_fragment) {
      return Damaged(bytes, pos, valid_end, "a fragment out of order");
    }
    pos += kHeaderBytes + h.length;
    in_fragment = h.type == kFirstType || h.type == kMiddleType;
    if (!in_fragment) valid_end = pos;
  }
  ManifestTailScan scan;
  scan.file_bytes = bytes.size();
  scan.valid_bytes = valid_end;
  return scan;
}

Result<ManifestTailScan> ScanManifestFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::IOError("open " + path + " to scan it");
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Status::IOError("read " + path + " to scan it");
  return ScanManifestBytes(bytes);
}

}  // namespace auxstore::store_internal
