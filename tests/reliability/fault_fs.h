// FaultFs: a RocksDB FileSystem for the reliability battery. It forwards
// everything to a real file system and
//  - appends one line per durability-relevant event (file created, bytes
//    synced, renamed, linked, deleted, directory synced) to an event log, so
//    a parent process can replay it after SIGKILL and cut power (power_cut.h);
//  - injects EIO on reads and EIO or ENOSPC on writes of WAL, SST and
//    MANIFEST files with a set probability, counting what it injected.
// The store's own watermark file is written with POSIX calls and is never
// seen here (it is fsynced before its rename and its directory after).
#pragma once

#include <rocksdb/file_system.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <string>

namespace auxstore::reliability {

enum class FileClass : uint8_t { kWal, kSst, kManifest, kOther };
FileClass ClassifyFile(const std::string& path);
const char* FileClassName(FileClass c);

struct FaultConfig {
  double read_error_prob = 0;       // EIO on a read of a WAL/SST/MANIFEST file
  double write_error_prob = 0;      // an error on an append/sync of one
  bool write_error_enospc = false;  // the write error is ENOSPC (else EIO)
};

class FaultFs : public rocksdb::FileSystemWrapper {
 public:
  // `event_log_path` empty: no event log.
  FaultFs(std::shared_ptr<rocksdb::FileSystem> base, const std::string& event_log_path,
          uint64_t seed);
  ~FaultFs() override;

  const char* Name() const override { return "AuxstoreFaultFs"; }

  void SetFaults(const FaultConfig& config);
  uint64_t injected_read_errors() const { return read_errors_; }
  uint64_t injected_write_errors() const { return write_errors_; }
  uint64_t injected_write_errors(FileClass c) const {
    return write_errors_by_class_[static_cast<int>(c)];
  }

  // Returns an error status (and counts it) with the configured probability.
  rocksdb::IOStatus MaybeReadError(const std::string& path);
  rocksdb::IOStatus MaybeWriteError(const std::string& path);
  void LogEvent(const std::string& line);

  rocksdb::IOStatus NewSequentialFile(const std::string& f, const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSSequentialFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewRandomAccessFile(const std::string& f, const rocksdb::FileOptions& o,
                                        std::unique_ptr<rocksdb::FSRandomAccessFile>* r,
                                        rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                    std::unique_ptr<rocksdb::FSWritableFile>* r,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReopenWritableFile(const std::string& f, const rocksdb::FileOptions& o,
                                       std::unique_ptr<rocksdb::FSWritableFile>* r,
                                       rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& f, const std::string& old,
                                      const rocksdb::FileOptions& o,
                                      std::unique_ptr<rocksdb::FSWritableFile>* r,
                                      rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus NewDirectory(const std::string& name, const rocksdb::IOOptions& o,
                                 std::unique_ptr<rocksdb::FSDirectory>* r,
                                 rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus DeleteFile(const std::string& f, const rocksdb::IOOptions& o,
                               rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus RenameFile(const std::string& s, const std::string& t,
                               const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus LinkFile(const std::string& s, const std::string& t,
                             const rocksdb::IOOptions& o, rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus Truncate(const std::string& f, size_t size, const rocksdb::IOOptions& o,
                             rocksdb::IODebugContext* dbg) override;

 private:
  rocksdb::IOStatus WrapWritable(const std::string& f, uint64_t start_size, bool existed,
                                 bool reopened, std::unique_ptr<rocksdb::FSWritableFile>* r);

  int log_fd_ = -1;
  std::string log_dir_;
  std::atomic<uint64_t> shadow_counter_{0};
  std::mutex mu_;  // rng_, config_
  std::mt19937_64 rng_;
  FaultConfig config_;
  std::atomic<bool> faults_on_{false};
  std::atomic<uint64_t> read_errors_{0}, write_errors_{0};
  std::atomic<uint64_t> write_errors_by_class_[4] = {};
};

}  // namespace auxstore::reliability
