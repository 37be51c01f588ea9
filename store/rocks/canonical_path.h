// The same file whatever the spelling of its directory (relative, "//", a
// trailing slash): RocksDB joins the path it was given with the file name,
// so the file-system wrappers compare canonical paths.
#pragma once

#include <filesystem>
#include <string>
#include <system_error>

namespace auxstore::store_internal {

inline std::string CanonicalPath(const std::string& path) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::path(path), ec);
  return ec ? path : p.string();
}

}  // namespace auxstore::store_internal
