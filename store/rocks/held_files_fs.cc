#include "store/rocks/held_files_fs.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <string>

namespace auxstore::store_internal {
namespace {

using rocksdb::FileOptions;
using rocksdb::FSRandomAccessFile;
using rocksdb::FSSequentialFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;

bool IsTableFile(const std::string& f) {
  auto ends = [&](const char* ext) {
    const std::string e(ext);
    return f.size() >= e.size() && f.compare(f.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".sst") || ends(".ldb") || ends(".blob");
}

class HeldFilesFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit HeldFilesFileSystem(std::shared_ptr<rocksdb::FileSystem> base)
      : FileSystemWrapper(std::move(base)) {}
  ~HeldFilesFileSystem() override {
    for (const auto& [name, fd] : held_) ::close(fd);
  }

  const char* Name() const override { return "auxstore.HeldFilesFileSystem"; }

  IOStatus NewRandomAccessFile(const std::string& f, const FileOptions& o,
                               std::unique_ptr<FSRandomAccessFile>* r, IODebugContext* d) override {
    IOStatus s = target()->NewRandomAccessFile(f, o, r, d);
    if (s.ok()) {
      Hold(f);
      return s;
    }
    const std::string held = HeldPath(f);
    return held.empty() ? s : target()->NewRandomAccessFile(held, o, r, d);
  }

  IOStatus NewSequentialFile(const std::string& f, const FileOptions& o,
                             std::unique_ptr<FSSequentialFile>* r, IODebugContext* d) override {
    IOStatus s = target()->NewSequentialFile(f, o, r, d);
    if (s.ok()) {
      Hold(f);
      return s;
    }
    const std::string held = HeldPath(f);
    return held.empty() ? s : target()->NewSequentialFile(held, o, r, d);
  }

  IOStatus GetFileSize(const std::string& f, const IOOptions& o, uint64_t* size,
                       IODebugContext* d) override {
    IOStatus s = target()->GetFileSize(f, o, size, d);
    if (s.ok()) return s;
    const std::string held = HeldPath(f);
    return held.empty() ? s : target()->GetFileSize(held, o, size, d);
  }

  IOStatus GetFileModificationTime(const std::string& f, const IOOptions& o, uint64_t* mtime,
                                   IODebugContext* d) override {
    IOStatus s = target()->GetFileModificationTime(f, o, mtime, d);
    if (s.ok()) return s;
    const std::string held = HeldPath(f);
    return held.empty() ? s : target()->GetFileModificationTime(held, o, mtime, d);
  }

 private:
  // Keeps a descriptor of table file `f` (the first time it is opened).
  void Hold(const std::string& f) {
    if (!IsTableFile(f)) return;
    std::lock_guard lock(mu_);
    if (held_.count(f)) return;
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) held_.emplace(f, fd);
  }
  // "/proc/self/fd/N" for a held file, "" for one never held.
  std::string HeldPath(const std::string& f) {
    if (!IsTableFile(f)) return "";
    std::lock_guard lock(mu_);
    auto it = held_.find(f);
    return it == held_.end() ? "" : "/proc/self/fd/" + std::to_string(it->second);
  }

  std::mutex mu_;
  std::map<std::string, int> held_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewHeldFilesFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<HeldFilesFileSystem>(std::move(base));
}

}  // namespace auxstore::store_internal
