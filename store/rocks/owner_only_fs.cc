#include "store/rocks/owner_only_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace auxstore::store_internal {
namespace {

using rocksdb::FileOptions;
using rocksdb::FSRandomRWFile;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOStatus;

// Through a descriptor opened without following symlinks: a link planted
// where RocksDB creates a file (its LOCK, say) never gets its target changed.
IOStatus RestrictMode(const std::string& fname, IOStatus created) {
  if (!created.ok()) return created;
  int fd = ::open(fname.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return IOStatus::IOError("make " + fname + " owner-only: " + std::strerror(errno) +
                             (errno == ELOOP ? " (it is a symbolic link)" : ""));
  }
  const int rc = ::fchmod(fd, 0600);
  ::close(fd);
  if (rc != 0) return IOStatus::IOError("chmod 0600 " + fname + ": " + std::strerror(errno));
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
    struct stat st;
    if (::lstat(f.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return IOStatus::IOError("refusing to lock " + f + ": it is a symbolic link");
    }
    return RestrictMode(f, target()->LockFile(f, o, l, d));
  }
  IOStatus NewLogger(const std::string& f, const rocksdb::IOOptions& o,
                     std::shared_ptr<rocksdb::Logger>* r, IODebugContext* d) override {
    return RestrictMode(f, target()->NewLogger(f, o, r, d));
  }
  IOStatus CreateDir(const std::string& d, const rocksdb::IOOptions& o,
                     IODebugContext* dbg) override {
    IOStatus s = target()->CreateDir(d, o, dbg);
    if (s.ok() && ::chmod(d.c_str(), 0700) != 0) {
      return IOStatus::IOError("chmod 0700 " + d + ": " + std::strerror(errno));
    }
    return s;
  }
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewOwnerOnlyFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<OwnerOnlyFileSystem>(std::move(base));
}

}  // namespace auxstore::store_internal
