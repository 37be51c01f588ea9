#include "store/table_precheck.h"

#include <rocksdb/env.h>
#include <rocksdb/file_checksum.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <limits>
#include <memory>
#include <regex>

#include "store/store_dir.h"
#include "store/table_format.h"

// Public in Debian's librocksdb 7.8.3 (the ldb tool's list_file_checksums
// uses it) but declared only in an internal header (file/file_util.h): the
// live table files of a MANIFEST, read without opening any of them.
namespace rocksdb {
Status GetFileChecksumsFromManifest(Env* src_env, const std::string& abs_path,
                                    uint64_t manifest_file_size, FileChecksumList* checksum_list);
}  // namespace rocksdb

namespace auxstore::store_internal {

using namespace table_format;

Status CheckTablePropertiesBlock(const std::string& table_file) {
  TableFile file(table_file);
  AUXSTORE_RETURN_IF_ERROR(file.Open());
  Result<Footer> footer = ReadFooter(file);
  // Not a layout this check knows (the store writes format 5 with XXH3):
  // leave the file to RocksDB's own checks.
  if (footer.status().code() == StatusCode::kNotSupported) return Status::Ok();
  AUXSTORE_RETURN_IF_ERROR(footer.status());
  std::vector<uint8_t> block;
  uint8_t compression = 0;
  AUXSTORE_RETURN_IF_ERROR(
      file.ReadVerifiedBlock(footer->metaindex, "metaindex", &block, &compression));
  if (compression != kNoCompression) return Status::Ok();  // RocksDB writes it uncompressed
  AUXSTORE_ASSIGN_OR_RETURN(std::optional<Handle> properties,
                            FindMetaBlock(block, "rocksdb.properties", file));
  if (!properties) return Status::Ok();
  return file.ReadVerifiedBlock(*properties, "properties", &block, &compression);
}

std::vector<std::string> LiveTableFileNames(const std::string& dir) {
  // Only the table files the MANIFEST names: RocksDB never opens the others
  // (a flush or compaction output a crash cut short, which it deletes), and
  // a power cut may leave those with any bytes in them.
  // The one CURRENT names, or the one an open reads instead (store_dir.h).
  Result<DirCheck> check = InspectStoreDir(dir);
  if (!check.ok() || check->state != DirState::kStore) return {};
  const std::string manifest = dir + "/" + check->manifest;
  std::unique_ptr<rocksdb::FileChecksumList> live(rocksdb::NewFileChecksumList());
  // The size "unknown" (max): with the real size, 7.8.3 asserts (live, so an
  // abort) that the last record ends at it, which a damaged MANIFEST breaks.
  rocksdb::Status rs = rocksdb::GetFileChecksumsFromManifest(
      rocksdb::Env::Default(), manifest, std::numeric_limits<uint64_t>::max(), live.get());
  if (!rs.ok()) return {};  // a MANIFEST RocksDB cannot read: its own open refuses
  std::vector<uint64_t> numbers;
  std::vector<std::string> checksums, names;
  if (!live->GetAllFileChecksums(&numbers, &checksums, &names).ok()) return {};
  std::vector<std::string> out;
  for (uint64_t number : numbers) {
    char name[32];
    std::snprintf(name, sizeof name, "%06" PRIu64 ".sst", number);
    out.push_back(name);
  }
  return out;
}

std::string RepairHint(const std::string& dir, const std::string& table_file) {
  return "; `auxstore verify --repair " + dir + "` sets " + table_file +
         " aside in the store directory and rewrites the entries it can still read";
}

std::string RepairHintFor(const std::string& dir, const std::string& message) {
  // A missing table is named with RocksDB's fallback suffix (.ldb).
  static const std::regex kTableFile(R"((\d{6,})\.(sst|ldb))");
  std::smatch m;
  if (!std::regex_search(message, m, kTableFile)) return "";
  return RepairHint(dir, m[1].str() + ".sst");
}

Status CheckTablePropertiesBlocks(const std::string& dir) {
  for (const std::string& name : LiveTableFileNames(dir)) {
    const std::string file = dir + "/" + name;
    if (::access(file.c_str(), F_OK) != 0) continue;  // a blob file, or missing: RocksDB says
    Status s = CheckTablePropertiesBlock(file);
    // A file deleted since the listing (a writer beside a reader) is not damage.
    if (s.code() == StatusCode::kIOError && ::access(file.c_str(), F_OK) != 0) continue;
    if (s.IsCorruption()) return Status::Corruption(s.message() + RepairHint(dir, name));
    AUXSTORE_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

}  // namespace auxstore::store_internal
