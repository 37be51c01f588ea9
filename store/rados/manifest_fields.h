// The fields of a manifest object (object_names.h, docs/shared-tier.md) that
// every reader and writer of one names the same way: its xattrs, its omap
// keys, and how a lease's deadline is written and read back.
#pragma once

#include <charconv>
#include <chrono>
#include <cstdint>
#include <optional>
#include <rados/librados.hpp>
#include <string>
#include <string_view>

namespace auxstore::rados {

inline constexpr const char* kHashXattr = "auxstore.xxh3";    // XXH3-128 of the bytes
inline constexpr const char* kPagesXattr = "auxstore.pages";  // how many pages it names
inline constexpr const char* kRefXattr = "auxstore.ref";      // set on a page a commit touches
inline constexpr std::string_view kLeasePrefix = "lease.";    // omap: lease.<holder> -> deadline
inline constexpr uint64_t kOmapPage = 1024;                   // osd_max_omap_entries_per_request

// A lease deadline's clock: ms since the Unix epoch (the holder's).
inline int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// A decimal integer as a deadline or a count is stored; nullopt for
// anything else.
inline std::optional<int64_t> ParseDecimal(const librados::bufferlist& bl) {
  const std::string s = bl.to_str();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

}  // namespace auxstore::rados
