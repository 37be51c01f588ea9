#include "store/rocks/deferred_delete_fs.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

#include "store/rocks/private_dir.h"

namespace auxstore::store_internal {
namespace {

using rocksdb::FileOptions;
using rocksdb::FSWritableFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

// Records that a write failed somewhere, then passes the status on.
class FailureRecordingFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FailureRecordingFile(std::unique_ptr<FSWritableFile>&& f,
                       std::shared_ptr<std::atomic<bool>> failed)
      : FSWritableFileOwnerWrapper(std::move(f)), failed_(std::move(failed)) {}

  IOStatus Append(const Slice& d, const IOOptions& o, IODebugContext* g) override {
    return Note(target()->Append(d, o, g));
  }
  IOStatus Append(const Slice& d, const IOOptions& o, const rocksdb::DataVerificationInfo& v,
                  IODebugContext* g) override {
    return Note(target()->Append(d, o, v, g));
  }
  IOStatus PositionedAppend(const Slice& d, uint64_t off, const IOOptions& o,
                            IODebugContext* g) override {
    return Note(target()->PositionedAppend(d, off, o, g));
  }
  IOStatus PositionedAppend(const Slice& d, uint64_t off, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& v, IODebugContext* g) override {
    return Note(target()->PositionedAppend(d, off, o, v, g));
  }
  IOStatus Flush(const IOOptions& o, IODebugContext* g) override {
    return Note(target()->Flush(o, g));
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* g) override {
    return Note(target()->Sync(o, g));
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* g) override {
    return Note(target()->Fsync(o, g));
  }
  IOStatus RangeSync(uint64_t off, uint64_t n, const IOOptions& o, IODebugContext* g) override {
    return Note(target()->RangeSync(off, n, o, g));
  }
  IOStatus Close(const IOOptions& o, IODebugContext* g) override {
    return Note(target()->Close(o, g));
  }

 private:
  IOStatus Note(IOStatus s) {
    if (!s.ok()) failed_->store(true);
    return s;
  }
  std::shared_ptr<std::atomic<bool>> failed_;
};

bool IsTableFile(const std::string& f) {
  auto ends = [&](const char* ext) {
    const std::string e(ext);
    return f.size() >= e.size() && f.compare(f.size() - e.size(), e.size(), e) == 0;
  };
  return ends(".sst") || ends(".ldb") || ends(".blob");
}

class DeferredDeleteFileSystem : public rocksdb::FileSystemWrapper {
 public:
  explicit DeferredDeleteFileSystem(std::shared_ptr<rocksdb::FileSystem> base)
      : FileSystemWrapper(std::move(base)), failed_(std::make_shared<std::atomic<bool>>(false)) {}

  const char* Name() const override { return "auxstore.DeferredDeleteFileSystem"; }

  IOStatus NewWritableFile(const std::string& f, const FileOptions& o,
                           std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    return Wrap(target()->NewWritableFile(f, o, r, d), r);
  }
  IOStatus ReopenWritableFile(const std::string& f, const FileOptions& o,
                              std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    return Wrap(target()->ReopenWritableFile(f, o, r, d), r);
  }
  IOStatus ReuseWritableFile(const std::string& f, const std::string& old, const FileOptions& o,
                             std::unique_ptr<FSWritableFile>* r, IODebugContext* d) override {
    return Wrap(target()->ReuseWritableFile(f, old, o, r, d), r);
  }

  IOStatus DeleteFile(const std::string& f, const IOOptions& o, IODebugContext* d) override {
    if (!failed_->load() || !IsTableFile(f)) return target()->DeleteFile(f, o, d);
    namespace fs = std::filesystem;
    const fs::path path(f);
    const fs::path trash = path.parent_path() / kTrashDir;
    std::error_code ec;
    Status made = MakePrivateDir(trash.string());
    if (!made.ok()) return IOStatus::IOError(made.message());
    fs::rename(path, trash / path.filename(), ec);
    return ec ? IOStatus::IOError("move " + f + " to " + trash.string() + ": " + ec.message())
              : IOStatus::OK();
  }

 private:
  IOStatus Wrap(IOStatus s, std::unique_ptr<FSWritableFile>* r) {
    if (s.ok() && *r) *r = std::make_unique<FailureRecordingFile>(std::move(*r), failed_);
    return s;
  }
  std::shared_ptr<std::atomic<bool>> failed_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewDeferredDeleteFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base) {
  return std::make_shared<DeferredDeleteFileSystem>(std::move(base));
}

Result<int> RestoreTrash(const std::string& db_dir) {
  namespace fs = std::filesystem;
  const fs::path trash = fs::path(db_dir) / kTrashDir;
  std::error_code ec;
  if (!fs::exists(trash, ec)) return 0;
  int moved = 0;
  for (auto& e : fs::directory_iterator(trash, ec)) {
    const fs::path back = fs::path(db_dir) / e.path().filename();
    if (fs::exists(back, ec)) continue;
    fs::rename(e.path(), back, ec);
    if (ec) return Status::IOError("restore " + e.path().string() + ": " + ec.message());
    ++moved;
  }
  return moved;
}

void PurgeTrash(const std::string& db_dir) {
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(db_dir) / kTrashDir, ec);
}

TrashListing ListTrash(const std::string& db_dir) {
  TrashListing l;
  const std::string trash = db_dir + "/" + kTrashDir;
  DIR* d = ::opendir(trash.c_str());
  if (d == nullptr) return l;
  l.exists = true;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name != "." && name != "..") l.inodes[name] = e->d_ino;
  }
  ::closedir(d);
  return l;
}

void UndoTrash(const std::string& db_dir, const TrashListing& before,
               const std::map<std::string, uint64_t>& dir_before) {
  const TrashListing after = ListTrash(db_dir);
  const std::string trash = db_dir + "/" + kTrashDir;
  for (const auto& [name, ino] : after.inodes) {
    auto was = before.inodes.find(name);
    if (was != before.inodes.end() && was->second == ino) continue;  // an earlier writer's
    const std::string from = trash + "/" + name, back = db_dir + "/" + name;
    struct stat st;
    if (dir_before.count(name) && ::lstat(back.c_str(), &st) != 0) {
      (void)::rename(from.c_str(), back.c_str());
    } else {
      (void)::unlink(from.c_str());
    }
  }
  if (!before.exists) (void)::rmdir(trash.c_str());  // only when empty
}

}  // namespace auxstore::store_internal
