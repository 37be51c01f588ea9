#include "tools/cli/raw_db.h"

#include <algorithm>
#include <filesystem>

namespace auxstore::cli {

Status FromRocksStatus(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  const std::string msg = what + ": " + s.ToString();
  if (s.IsIOError() && s.ToString().find("lock") != std::string::npos) {
    return Status::Busy(what + ": the store is open for writing by another handle (" +
                        s.ToString() + ")");
  }
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsBusy() || s.IsTryAgain()) return Status::Busy(msg);
  return Status::IOError(msg);
}

Result<std::unique_ptr<RawDb>> RawDb::Open(const std::string& path, bool read_only) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path + "/CURRENT", ec)) return Status::NotFound("no auxstore store at " + path);
  std::unique_ptr<RawDb> raw(new RawDb(path));
  std::vector<std::string> families;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(raw->setup_.db, path, &families);
  if (!ls.ok()) return FromRocksStatus(ls, "open store " + path);
  if (std::find(families.begin(), families.end(), store_internal::kMetaCf) == families.end()) {
    return Status::InvalidArgument(path + " is a RocksDB database but not an auxstore store");
  }
  rocksdb::DBOptions opts = raw->setup_.db;
  opts.create_if_missing = false;
  opts.create_missing_column_families = false;
  rocksdb::Status s =
      read_only ? rocksdb::DB::OpenForReadOnly(opts, path, raw->setup_.cfs, &raw->cfs_, &raw->db_)
                : rocksdb::DB::Open(opts, path, raw->setup_.cfs, &raw->cfs_, &raw->db_);
  if (!s.ok()) return FromRocksStatus(s, "open store " + path);
  return raw;
}

RawDb::~RawDb() {
  if (!db_) return;
  for (auto* h : cfs_) (void)db_->DestroyColumnFamilyHandle(h);
  (void)db_->Close();
  delete db_;
}

uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code fe;
    if (it->is_regular_file(fe)) total += it->file_size(fe);
  }
  return total;
}

}  // namespace auxstore::cli
