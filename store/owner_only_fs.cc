#include "store/owner_only_fs.h"

#include <sys/stat.h>

namespace auxstore::store_internal {
namespace {

using rocksdb::FileOptions;
using rocksdb::FSRandomRWFile;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOStatus;

IOStatus RestrictMode(const std::string& fname, IOStatus created) {
  if (created.ok() && ::chmod(fname.c_str(), 0600) != 0) {
    return IOStatus::IOError("chmod 0600 " + fname);
  }
  return created;
}

class OwnerOnlyFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit OwnerOnlyFileSystem(std::shared_ptr<rocksdb::FileSystem> base)
      : FileSystemWrapper(std::move(base)) {}

  const char* Name() const override { return "auxstore.OwnerOnlyFileSystem"; }

  IOStatus NewWritableFile(const std::string& f, const FileOptions& o,
                           std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    return RestrictMode(f, target()->NewWritableFile(f, o, r, d));
  }
  IOStatus ReopenWritableFile(const std::string& f, const FileOptions& o,
                              std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    return RestrictMode(f, target()->ReopenWritableFile(f, o, r, d));
  }
  IOStatus ReuseWritableFile(const std::string& f, const std::string& old, const FileOptions& o,
                             std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    return RestrictMode(f, target()->ReuseWritableFile(f, old, o, r, d));
  }
  IOStatus NewRandomRWFile(const std::string& f, const FileOptions& o,
                           std::unique_ptr<FSRandomRWFile>* r, IODebugContext* d) override {
    return RestrictMode(f, target()->NewRandomRWFile(f, o, r, d));
  }
  IOStatus LockFile(const std::string& f, const rocksdb::IOOptions& o, rocksdb::FileLock** l,
                    IODebugContext* d) override {
    return RestrictMode(f, target()->LockFile(f, o, l, d));
  }
  IOStatus NewLogger(const std::string& f, const rocksdb::IOOptions& o,
                     std::shared_ptr<rocksdb::Logger>* r, IODebugContext* d) override {
    return RestrictMode(f, target()->NewLogger(f, o, r, d));
  }
  IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& o,
                     IODebugContext* dbg) override {
    IOStatus s = target()->CreateDir(d, o, dbg);
    if (s.ok()) ::chmod(d.c_str(), 0700);
    return s;
  }
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewOwnerOnlyFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<OwnerOnlyFileSystem>(std::move(base));
}

}  // namespace auxstore::store_internal
