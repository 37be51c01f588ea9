#include "store/rados/object_names.h"

#include <cstring>

#include "format/xxh3.h"  // pages are hashed with AVX2 where the CPU has it

namespace auxstore::rados {

std::string ToHex(ByteSpan bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  s.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    s.push_back(kHex[b >> 4]);
    s.push_back(kHex[b & 15]);
  }
  return s;
}

PageKey PageKey::Of(ByteSpan bytes) {
  XXH128_canonical_t canon;
  XXH128_canonicalFromHash(&canon, XXH3_128bits(bytes.data(), bytes.size()));
  PageKey k;
  std::memcpy(k.hash.data(), canon.digest, k.hash.size());
  return k;
}

std::string PageKey::Hex() const { return ToHex(hash); }

std::optional<PageKey> PageKey::FromObjectName(std::string_view name) {
  if (!name.starts_with(kPrefix) || name.size() != kPrefix.size() + 32) return std::nullopt;
  name.remove_prefix(kPrefix.size());
  PageKey k;
  for (size_t i = 0; i < 16; ++i) {
    int v = 0;
    for (char c : name.substr(2 * i, 2)) {
      int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + d;
    }
    k.hash[i] = static_cast<uint8_t>(v);
  }
  return k;
}

std::string ManifestObjectName(ByteSpan id) { return std::string(kManifestPrefix) + ToHex(id); }

}  // namespace auxstore::rados
