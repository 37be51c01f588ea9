#include "store/sst_block_salvage.h"

#include <fstream>
#include <regex>

namespace auxstore::store_internal {
namespace {

// A varint32 at p (< end); false when it runs past `end` or is too long.
bool Varint32(const uint8_t*& p, const uint8_t* end, uint32_t* v) {
  uint32_t out = 0;
  for (int shift = 0; shift <= 28 && p < end; shift += 7) {
    const uint8_t b = *p++;
    out |= static_cast<uint32_t>(b & 0x7f) << shift;
    if ((b & 0x80) == 0) {
      *v = out;
      return true;
    }
  }
  return false;
}

uint32_t Fixed32(const uint8_t* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 | uint32_t{p[3]} << 24;
}

// Entries of [p, end), the first at a restart point (no shared key bytes).
void ParseSegment(const uint8_t* p, const uint8_t* end, std::vector<SalvagedEntry>* out) {
  std::string key;
  while (p < end) {
    uint32_t shared = 0, non_shared = 0, value_len = 0;
    if (!Varint32(p, end, &shared) || !Varint32(p, end, &non_shared) ||
        !Varint32(p, end, &value_len) || shared > key.size() ||
        static_cast<uint64_t>(end - p) < uint64_t{non_shared} + value_len) {
      return;
    }
    key.resize(shared);
    key.append(reinterpret_cast<const char*>(p), non_shared);
    p += non_shared;
    if (key.size() < 8) return;  // an internal key ends in 8 bytes of sequence and type
    uint64_t packed = 0;
    for (int i = 7; i >= 0; --i)
      packed = packed << 8 | static_cast<uint8_t>(key[key.size() - 8 + i]);
    SalvagedEntry e;
    e.user_key = key.substr(0, key.size() - 8);
    e.is_value = (packed & 0xff) == 0x1;  // kTypeValue
    e.sequence = packed >> 8;
    e.value.assign(reinterpret_cast<const char*>(p), value_len);
    p += value_len;
    out->push_back(std::move(e));
  }
}

}  // namespace

std::optional<BlockHandle> DamagedBlockOf(const std::string& message) {
  static const std::regex re(R"( in (\S+) offset (\d+) size (\d+))");
  std::smatch m;
  if (!std::regex_search(message, m, re)) return std::nullopt;
  BlockHandle b;
  b.file = m[1].str();
  b.offset = std::stoull(m[2].str());
  b.size = std::stoull(m[3].str());
  return b;
}

std::vector<SalvagedEntry> SalvageDataBlock(const BlockHandle& b) {
  std::vector<SalvagedEntry> out;
  if (b.size < 4 || b.size > (256u << 20)) return out;
  std::ifstream in(b.file, std::ios::binary);
  std::string bytes(b.size + 1, '\0');  // and the trailer's compression type
  in.seekg(static_cast<std::streamoff>(b.offset));
  if (!in.read(bytes.data(), static_cast<std::streamsize>(b.size + 1))) return out;
  if (bytes[b.size] != 0) return out;  // compressed: not parsed (the store writes none)
  const auto* data = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* footer = data + b.size - 4;
  // Blocks up to 64 KiB pack the index type in the top bit (binary search: 0).
  const uint32_t restarts = Fixed32(footer) & (b.size <= (64u << 10) ? 0x7fffffffu : 0xffffffffu);
  const uint64_t array_bytes = uint64_t{restarts} * 4;
  bool ok = restarts > 0 && array_bytes <= b.size - 4;
  const uint8_t* array = ok ? footer - array_bytes : nullptr;
  std::vector<uint32_t> points;
  for (uint32_t i = 0; ok && i < restarts; ++i) {
    const uint32_t at = Fixed32(array + 4 * i);
    ok = at < static_cast<uint64_t>(array - data) && (points.empty() || at > points.back());
    points.push_back(at);
  }
  if (!ok) {  // the restart array is damaged: one walk from the start
    ParseSegment(data, footer, &out);
    return out;
  }
  for (size_t i = 0; i < points.size(); ++i) {
    const uint8_t* end = i + 1 < points.size() ? data + points[i + 1] : array;
    ParseSegment(data + points[i], end, &out);
  }
  return out;
}

}  // namespace auxstore::store_internal
