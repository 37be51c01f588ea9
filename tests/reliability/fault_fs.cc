#include "tests/reliability/fault_fs.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

namespace auxstore::reliability {

using rocksdb::IODebugContext;
using rocksdb::IOOptions;
using rocksdb::IOStatus;
using rocksdb::Slice;

FileClass ClassifyFile(const std::string& path) {
  const std::string name = std::filesystem::path(path).filename().string();
  auto ends = [&](const char* s) {
    const std::string suf(s);
    return name.size() >= suf.size() &&
           name.compare(name.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (ends(".log") && name != "LOG") return FileClass::kWal;
  if (ends(".sst")) return FileClass::kSst;
  if (name.rfind("MANIFEST-", 0) == 0) return FileClass::kManifest;
  return FileClass::kOther;
}

const char* FileClassName(FileClass c) {
  switch (c) {
    case FileClass::kWal:
      return "WAL";
    case FileClass::kSst:
      return "SST";
    case FileClass::kManifest:
      return "MANIFEST";
    default:
      return "other";
  }
}

namespace {

class FaultWritableFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  FaultWritableFile(std::unique_ptr<rocksdb::FSWritableFile> t, FaultFs* fs, std::string path,
                    uint64_t pos)
      : FSWritableFileOwnerWrapper(std::move(t)), fs_(fs), path_(std::move(path)), pos_(pos) {}

  IOStatus Append(const Slice& data, const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = fs_->MaybeWriteError(path_);
    if (!s.ok()) return s;
    s = target()->Append(data, o, dbg);
    if (s.ok()) pos_ += data.size();
    return s;
  }
  IOStatus Append(const Slice& data, const IOOptions& o, const rocksdb::DataVerificationInfo& v,
                  IODebugContext* dbg) override {
    IOStatus s = fs_->MaybeWriteError(path_);
    if (!s.ok()) return s;
    s = target()->Append(data, o, v, dbg);
    if (s.ok()) pos_ += data.size();
    return s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            IODebugContext* dbg) override {
    IOStatus s = fs_->MaybeWriteError(path_);
    if (!s.ok()) return s;
    s = target()->PositionedAppend(data, offset, o, dbg);
    if (s.ok()) pos_ = std::max(pos_, offset + data.size());
    return s;
  }
  IOStatus PositionedAppend(const Slice& data, uint64_t offset, const IOOptions& o,
                            const rocksdb::DataVerificationInfo& v, IODebugContext* dbg) override {
    IOStatus s = fs_->MaybeWriteError(path_);
    if (!s.ok()) return s;
    s = target()->PositionedAppend(data, offset, o, v, dbg);
    if (s.ok()) pos_ = std::max(pos_, offset + data.size());
    return s;
  }
  IOStatus Truncate(uint64_t size, const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = target()->Truncate(size, o, dbg);
    if (s.ok()) {
      pos_ = size;
      fs_->LogEvent("T " + std::to_string(size) + " " + path_);
    }
    return s;
  }
  IOStatus Sync(const IOOptions& o, IODebugContext* dbg) override {
    return Synced(target()->Sync(o, dbg));
  }
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    return Synced(target()->Fsync(o, dbg));
  }

 private:
  IOStatus Synced(IOStatus s) {
    if (!s.ok()) return s;
    IOStatus injected = fs_->MaybeWriteError(path_);
    // A failed fsync leaves what reached the disk unknown: log nothing.
    if (!injected.ok()) return injected;
    fs_->LogEvent("S " + std::to_string(pos_) + " " + path_);
    return s;
  }

  FaultFs* fs_;
  std::string path_;
  uint64_t pos_;
};

class FaultRandomAccessFile : public rocksdb::FSRandomAccessFileOwnerWrapper {
 public:
  FaultRandomAccessFile(std::unique_ptr<rocksdb::FSRandomAccessFile> t, FaultFs* fs,
                        std::string path)
      : FSRandomAccessFileOwnerWrapper(std::move(t)), fs_(fs), path_(std::move(path)) {}
  IOStatus Read(uint64_t offset, size_t n, const IOOptions& o, Slice* result, char* scratch,
                IODebugContext* dbg) const override {
    IOStatus s = fs_->MaybeReadError(path_);
    if (!s.ok()) return s;
    return target()->Read(offset, n, o, result, scratch, dbg);
  }
  IOStatus MultiRead(rocksdb::FSReadRequest* reqs, size_t num, const IOOptions& o,
                     IODebugContext* dbg) override {
    IOStatus s = fs_->MaybeReadError(path_);
    if (!s.ok()) {
      for (size_t i = 0; i < num; ++i) reqs[i].status = s;
      return s;
    }
    return target()->MultiRead(reqs, num, o, dbg);
  }

 private:
  FaultFs* fs_;
  std::string path_;
};

class FaultSequentialFile : public rocksdb::FSSequentialFileOwnerWrapper {
 public:
  FaultSequentialFile(std::unique_ptr<rocksdb::FSSequentialFile> t, FaultFs* fs, std::string path)
      : FSSequentialFileOwnerWrapper(std::move(t)), fs_(fs), path_(std::move(path)) {}
  IOStatus Read(size_t n, const IOOptions& o, Slice* result, char* scratch,
                IODebugContext* dbg) override {
    IOStatus s = fs_->MaybeReadError(path_);
    if (!s.ok()) return s;
    return target()->Read(n, o, result, scratch, dbg);
  }

 private:
  FaultFs* fs_;
  std::string path_;
};

class LoggingDirectory : public rocksdb::FSDirectoryWrapper {
 public:
  LoggingDirectory(std::unique_ptr<rocksdb::FSDirectory> t, FaultFs* fs, std::string path)
      : FSDirectoryWrapper(std::move(t)), fs_(fs), path_(std::move(path)) {}
  IOStatus Fsync(const IOOptions& o, IODebugContext* dbg) override {
    IOStatus s = FSDirectoryWrapper::Fsync(o, dbg);
    if (s.ok()) fs_->LogEvent("Y " + path_);
    return s;
  }
  IOStatus FsyncWithDirOptions(const IOOptions& o, IODebugContext* dbg,
                               const rocksdb::DirFsyncOptions& d) override {
    IOStatus s = FSDirectoryWrapper::FsyncWithDirOptions(o, dbg, d);
    if (s.ok()) fs_->LogEvent("Y " + path_);
    return s;
  }

 private:
  FaultFs* fs_;
  std::string path_;
};

std::string Normal(const std::string& p) {
  return std::filesystem::path(p).lexically_normal().string();
}

}  // namespace

FaultFs::FaultFs(std::shared_ptr<rocksdb::FileSystem> base, const std::string& event_log_path,
                 uint64_t seed)
    : FileSystemWrapper(base), rng_(seed) {
  if (!event_log_path.empty()) {
    log_fd_ = ::open(event_log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    log_dir_ = std::filesystem::path(event_log_path).parent_path().string();
  }
}

FaultFs::~FaultFs() {
  if (log_fd_ >= 0) ::close(log_fd_);
}

void FaultFs::SetFaults(const FaultConfig& config) {
  std::lock_guard lock(mu_);
  config_ = config;
  faults_on_ = config.read_error_prob > 0 || config.write_error_prob > 0;
}

IOStatus FaultFs::MaybeReadError(const std::string& path) {
  if (!faults_on_ || ClassifyFile(path) == FileClass::kOther) return IOStatus::OK();
  std::lock_guard lock(mu_);
  if (std::uniform_real_distribution<double>(0, 1)(rng_) >= config_.read_error_prob) {
    return IOStatus::OK();
  }
  ++read_errors_;
  return IOStatus::IOError("injected EIO reading " + path);
}

IOStatus FaultFs::MaybeWriteError(const std::string& path) {
  const FileClass cls = ClassifyFile(path);
  if (!faults_on_ || cls == FileClass::kOther) return IOStatus::OK();
  std::lock_guard lock(mu_);
  if (std::uniform_real_distribution<double>(0, 1)(rng_) >= config_.write_error_prob) {
    return IOStatus::OK();
  }
  ++write_errors_;
  ++write_errors_by_class_[static_cast<int>(cls)];
  if (config_.write_error_enospc) return IOStatus::NoSpace("injected ENOSPC writing " + path);
  return IOStatus::IOError("injected EIO writing " + path);
}

void FaultFs::LogEvent(const std::string& line) {
  if (log_fd_ < 0) return;
  const std::string l = line + "\n";
  // One write per line on an O_APPEND fd: a SIGKILL never leaves half a line
  // followed by another event.
  (void)!::write(log_fd_, l.data(), l.size());
}

IOStatus FaultFs::NewSequentialFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                    IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSSequentialFile> file;
  IOStatus s = target()->NewSequentialFile(f, o, &file, dbg);
  if (s.ok()) r->reset(new FaultSequentialFile(std::move(file), this, Normal(f)));
  return s;
}

IOStatus FaultFs::NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                      IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSRandomAccessFile> file;
  IOStatus s = target()->NewRandomAccessFile(f, o, &file, dbg);
  if (s.ok()) r->reset(new FaultRandomAccessFile(std::move(file), this, Normal(f)));
  return s;
}

IOStatus FaultFs::WrapWritable(const std::string& f, uint64_t start_size, bool existed,
                               bool reopened, std::unique_ptr<rocksdb::FSWritableFile>* r) {
  LogEvent(std::string(reopened ? "O " : "C ") + (existed ? "1 " : "0 ") +
           std::to_string(start_size) + " " + f);
  r->reset(new FaultWritableFile(std::move(*r), this, f, start_size));
  return IOStatus::OK();
}

IOStatus FaultFs::NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                  std::unique_ptr<rocksdb::FSWritableFile>* r,
                                  IODebugContext* dbg) {
  const std::string path = Normal(f);
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  IOStatus s = target()->NewWritableFile(f, o, r, dbg);
  if (!s.ok()) return s;
  return WrapWritable(path, 0, existed, false, r);
}

IOStatus FaultFs::ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                     std::unique_ptr<rocksdb::FSWritableFile>* r,
                                     IODebugContext* dbg) {
  const std::string path = Normal(f);
  std::error_code ec;
  const bool existed = std::filesystem::exists(path, ec);
  const uint64_t size = existed ? std::filesystem::file_size(path, ec) : 0;
  IOStatus s = target()->ReopenWritableFile(f, o, r, dbg);
  if (!s.ok()) return s;
  return WrapWritable(path, size, existed, true, r);
}

IOStatus FaultFs::ReuseWritableFile(const std::string& f, const std::string& old,
                                    const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    IODebugContext* dbg) {
  IOStatus s = target()->ReuseWritableFile(f, old, o, r, dbg);
  if (!s.ok()) return s;
  LogEvent("D " + Normal(old));
  return WrapWritable(Normal(f), 0, false, false, r);
}

IOStatus FaultFs::NewDirectory(const std::string& name, const IOOptions& o,
                               std::unique_ptr<rocksdb::FSDirectory>* r, IODebugContext* dbg) {
  std::unique_ptr<rocksdb::FSDirectory> dir;
  IOStatus s = target()->NewDirectory(name, o, &dir, dbg);
  if (s.ok()) r->reset(new LoggingDirectory(std::move(dir), this, Normal(name)));
  return s;
}

IOStatus FaultFs::DeleteFile(const std::string& f, const IOOptions& o, IODebugContext* dbg) {
  IOStatus s = target()->DeleteFile(f, o, dbg);
  if (s.ok()) LogEvent("D " + Normal(f));
  return s;
}

IOStatus FaultFs::RenameFile(const std::string& src, const std::string& dst, const IOOptions& o,
                             IODebugContext* dbg) {
  // Keep the file a rename replaces: a power cut before the directory is
  // synced brings it back (power_cut.h, harsh mode).
  std::string shadow = "-";
  std::error_code ec;
  if (log_fd_ >= 0 && std::filesystem::exists(dst, ec) &&
      std::filesystem::file_size(dst, ec) <= (1u << 20)) {
    shadow = log_dir_ + "/shadow-" + std::to_string(shadow_counter_++);
    std::filesystem::copy_file(dst, shadow, std::filesystem::copy_options::overwrite_existing, ec);
    if (ec) shadow = "-";
  }
  // Logged before the rename, not after: a kill between the rename and the
  // log line would otherwise hide it, and the cut would keep the renamed
  // file (CURRENT naming a new MANIFEST) while removing what it names
  // (found by power_loss_test --cycles 1000). A rename logged but not done
  // is harmless: its target comes back as the shadow, which is what it held.
  LogEvent("R " + shadow + " " + Normal(src) + " " + Normal(dst));
  return target()->RenameFile(src, dst, o, dbg);
}

IOStatus FaultFs::LinkFile(const std::string& src, const std::string& dst, const IOOptions& o,
                           IODebugContext* dbg) {
  IOStatus s = target()->LinkFile(src, dst, o, dbg);
  if (s.ok()) LogEvent("L " + Normal(src) + " " + Normal(dst));
  return s;
}

IOStatus FaultFs::Truncate(const std::string& f, size_t size, const IOOptions& o,
                           IODebugContext* dbg) {
  IOStatus s = target()->Truncate(f, size, o, dbg);
  if (s.ok()) LogEvent("T " + std::to_string(size) + " " + Normal(f));
  return s;
}

}  // namespace auxstore::reliability
