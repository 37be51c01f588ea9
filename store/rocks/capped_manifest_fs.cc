#include "store/rocks/capped_manifest_fs.h"

#include <algorithm>
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

class CappedSequentialFile : public rocksdb::FSSequentialFileOwnerWrapper {
 public:
  CappedSequentialFile(std::unique_ptr<FSSequentialFile> base, uint64_t visible)
      : FSSequentialFileOwnerWrapper(std::move(base)), end_(visible), left_(visible) {}

  IOStatus Read(size_t n, const IOOptions& o, Slice* result, char* scratch,
                IODebugContext* d) override {
    const size_t want = static_cast<size_t>(std::min<uint64_t>(n, left_));
    if (want == 0) {
      *result = Slice();
      return IOStatus::OK();
    }
    IOStatus s = target()->Read(want, o, result, scratch, d);
    if (s.ok()) left_ -= std::min<uint64_t>(result->size(), left_);
    return s;
  }

  IOStatus Skip(uint64_t n) override {
    const uint64_t skip = std::min(n, left_);
    left_ -= skip;
    return target()->Skip(skip);
  }

  IOStatus PositionedRead(uint64_t offset, size_t n, const IOOptions& o, Slice* result,
                          char* scratch, IODebugContext* d) override {
    const size_t want =
        offset >= end_ ? 0 : static_cast<size_t>(std::min<uint64_t>(n, end_ - offset));
    if (want == 0) {
      *result = Slice();
      return IOStatus::OK();
    }
    return target()->PositionedRead(offset, want, o, result, scratch, d);
  }

 private:
  const uint64_t end_;  // the visible size
  uint64_t left_;       // what sequential reads may still return
};

class CappedManifestFileSystem : public rocksdb::FileSystemWrapper {
 public:
  CappedManifestFileSystem(std::shared_ptr<rocksdb::FileSystem> base, std::string manifest,
                           uint64_t visible)
      : FileSystemWrapper(std::move(base)),
        manifest_(CanonicalPath(manifest)),
        name_(std::filesystem::path(manifest).filename().string()),
        visible_(visible) {}

  const char* Name() const override { return "auxstore.CappedManifestFileSystem"; }

  IOStatus NewSequentialFile(const std::string& f, const FileOptions& o,
                             std::unique_ptr<FSSequentialFile>* r, IODebugContext* d) override {
    IOStatus s = target()->NewSequentialFile(f, o, r, d);
    if (s.ok() && IsCapped(f)) *r = std::make_unique<CappedSequentialFile>(std::move(*r), visible_);
    return s;
  }

  IOStatus GetFileSize(const std::string& f, const IOOptions& o, uint64_t* size,
                       IODebugContext* d) override {
    IOStatus s = target()->GetFileSize(f, o, size, d);
    if (s.ok() && IsCapped(f)) *size = std::min(*size, visible_);
    return s;
  }

 private:
  bool IsCapped(const std::string& f) const {
    return std::filesystem::path(f).filename() == name_ && CanonicalPath(f) == manifest_;
  }

  const std::string manifest_;
  const std::string name_;
  const uint64_t visible_;
};

}  // namespace

std::shared_ptr<rocksdb::FileSystem> NewCappedManifestFileSystem(
    std::shared_ptr<rocksdb::FileSystem> base, const std::string& manifest,
    uint64_t visible_bytes) {
  return std::make_shared<CappedManifestFileSystem>(std::move(base), manifest, visible_bytes);
}

}  // namespace auxstore::store_internal
