#include "store/rocks/current_override_fs.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>

#include "store/rocks/canonical_path.h"

namespace auxstore::store_internal {
namespace {

using rocksdb::FileOptions;
using rocksdb::FSSequentialFile;
using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

// A file's content from memory.
class StringSequentialFile : public FSSequentialFile {
 public:
  explicit StringSequentialFile(std::string data) : data_(std::move(data)) {}
  IOStatus Read(size_t n, const IOOptions&, Slice* result, char* scratch,
                IODebugContext*) override {
    const size_t take = std::min(n, data_.size() - at_);
    std::memcpy(scratch, data_.data() + at_, take);
    at_ += take;
    *result = Slice(scratch, take);
    return IOStatus::OK();
  }
  IOStatus Skip(uint64_t n) override {
    at_ += static_cast<size_t>(std::min<uint64_t>(n, data_.size() - at_));
    return IOStatus::OK();
  }

 private:
  const std::string data_;
  size_t at_ = 0;
};

class CurrentOverrideFileSystem : public rocksdb::FileSystemWrapper {
 public:
  CurrentOverrideFileSystem(std::shared_ptr<rocksdb::FileSystem> base, const std::string& dir,
                            const std::string& manifest)
      : FileSystemWrapper(std::move(base)),
        current_(CanonicalPath(dir + "/CURRENT")),
        content_(manifest + "\n") {}

  const char* Name() const override { return "auxstore.CurrentOverrideFileSystem"; }

  IOStatus NewSequentialFile(const std::string& f, const FileOptions& o,
                             std::unique_ptr<FSSequentialFile>* r, IODebugContext* d) override {
    if (!Overrides(f)) return target()->NewSequentialFile(f, o, r, d);
    *r = std::make_unique<StringSequentialFile>(content_);
    return IOStatus::OK();
  }

  IOStatus GetFileSize(const std::string& f, const IOOptions& o, uint64_t* size,
                       IODebugContext* d) override {
    if (!Overrides(f)) return target()->GetFileSize(f, o, size, d);
    *size = content_.size();
    return IOStatus::OK();
  }

  // RocksDB replaces CURRENT by renaming a temporary file over it.
  IOStatus RenameFile(const std::string& from, const std::string& to, const IOOptions& o,
                      IODebugContext* d) override {
    IOStatus s = target()->RenameFile(from, to, o, d);
    if (s.ok() && CanonicalPath(to) == current_) overriding_ = false;
    return s;
  }

 private:
  bool Overrides(const std::string& f) const { return overriding_ && CanonicalPath(f) == current_; }

  const std::string current_;  // CURRENT's path
  const std::string content_;  // what it reads as until replaced
  std::atomic<bool> overriding_{true};
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewCurrentOverrideFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, const std::string& dir,
    const std::string& manifest) {
  return std::make_shared<CurrentOverrideFileSystem>(std::move(base), dir, manifest);
}

}  // namespace auxstore::store_internal
