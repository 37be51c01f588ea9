// The RADOS object layout of the shared tier (docs/shared-tier.md), inside
// the pool and namespace the URI names:
//
//   page.<32 hex>      a page: its bytes only; the name is the XXH3-128 of
//                      those bytes, so two writers of one page name the same
//                      object and every read is checked against its name
//   manifest.<hex id>  a manifest: its bytes; xattr auxstore.xxh3 (XXH3-128
//                      of the bytes) and auxstore.pages (how many it names);
//                      omap page.<32 hex> for each page it names, and
//                      lease.<holder> -> deadline for each lease on it
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "auxstore/blob_codecs.h"

namespace auxstore::rados {

// A page's id in the shared tier: the XXH3-128 of its bytes.
struct PageKey {
  std::array<uint8_t, 16> hash{};  // XXH128_canonical_t: big-endian high64 then low64

  static PageKey Of(ByteSpan bytes);
  std::string Hex() const;
  std::string ObjectName() const { return std::string(kPrefix) + Hex(); }
  // The key an object name `page.<32 hex>` carries; nullopt for any other name.
  static std::optional<PageKey> FromObjectName(std::string_view name);

  static constexpr std::string_view kPrefix = "page.";
  friend bool operator==(const PageKey&, const PageKey&) = default;
  friend auto operator<=>(const PageKey&, const PageKey&) = default;
};

inline constexpr std::string_view kManifestPrefix = "manifest.";
inline constexpr size_t kMaxManifestIdBytes = 512;

// manifest.<hex of id>; `id` is the caller's (e.g. namespace ‖ prefix key).
std::string ManifestObjectName(ByteSpan id);

std::string ToHex(ByteSpan bytes);

}  // namespace auxstore::rados
