#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "store/db_store.h"
#include "store/deferred_delete_fs.h"
#include "store/meta_keys.h"
#include "store/open_on_file_system.h"
#include "store/watermark.h"

namespace auxstore {

Result<std::unique_ptr<Store>> Store::Open(const Options& options, const std::string& path) {
  return store_internal::DbStore::Open(options, path);
}

namespace store_internal {

Status FromRocks(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  std::string msg = what + ": " + s.ToString();
  if (s.IsNotFound()) return Status::NotFound(msg);
  if (s.IsCorruption()) return Status::Corruption(msg);
  if (s.IsInvalidArgument()) return Status::InvalidArgument(msg);
  if (s.IsIOError() || s.IsNoSpace()) return Status::IOError(msg);
  if (s.IsBusy() || s.IsTryAgain() || s.IsTimedOut()) return Status::Busy(msg);
  if (s.IsNotSupported()) return Status::NotSupported(msg);
  return Status::Internal(msg);
}

int64_t NowUnixMs() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count();
}

DbStore::DbStore(const Options& options, std::string path, std::shared_ptr<rocksdb::FileSystem> fs)
    : options_(options), path_(std::move(path)), setup_(MakeRocksSetup(std::move(fs))) {}

Result<std::unique_ptr<Store>> DbStore::Open(const Options& options, const std::string& path,
                                             std::shared_ptr<rocksdb::FileSystem> fs) {
  if (path.empty()) return Status::InvalidArgument("store path is empty");
  if (options.chunk_bytes == 0) return Status::InvalidArgument("Options.chunk_bytes is 0");
  if (options.chunk_bytes > (1u << 30)) {
    return Status::InvalidArgument("Options.chunk_bytes is over 1 GiB");
  }
  std::unique_ptr<DbStore> store(new DbStore(options, path, std::move(fs)));
  Status s = store->OpenDb();
  if (!s.ok()) {
    store->CloseDb();
    return s;
  }
  {  // loads the index; then, unless disabled, runs maintenance
    store->maint_thread_ = std::thread([raw = store.get()] { raw->MaintenanceLoop(); });
  }
  return std::unique_ptr<Store>(std::move(store));
}

DbStore::~DbStore() {
  {
    std::lock_guard lock(maint_mu_);
    stop_ = true;
  }
  maint_cv_.notify_all();
  if (maint_thread_.joinable()) maint_thread_.join();
  if (db_ && !options_.read_only && !fenced_) {
    // A clean close makes async snapshots durable and keeps recency; errors
    // here have no caller to go to and change nothing already committed.
    (void)PersistRecency();
    (void)Flush();
    // Flush the memtables so the next open replays no WAL: open time stays
    // independent of how much was written (after a crash the WAL replayed is
    // bounded by max_total_wal_size).
    rocksdb::FlushOptions fo;
    (void)db_->Flush(fo, cf_);
  }
  CloseDb();
}

void DbStore::CloseDb() {
  if (!db_) return;
  for (auto* h : cf_) {
    if (h) (void)db_->DestroyColumnFamilyHandle(h);
  }
  cf_.clear();
  (void)db_->Close();
  db_.reset();
}

Status DbStore::OpenDb() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool fresh = !fs::exists(path_ + "/CURRENT", ec);
  if (fresh) {
    if (options_.read_only || !options_.create_if_missing) {
      return Status::NotFound("no auxstore store at " + path_);
    }
    const fs::path parent = fs::path(path_).parent_path();
    if (!parent.empty()) fs::create_directories(parent, ec);
    if (::mkdir(path_.c_str(), 0700) != 0 && errno != EEXIST) {
      return Status::IOError("create store directory " + path_ + ": " + std::strerror(errno));
    }
  }
  // Owner-only whatever the umask: aux state can leak users' prompts.
  if (!options_.read_only && ::chmod(path_.c_str(), 0700) != 0) {
    return Status::IOError("chmod 0700 " + path_ + ": " + std::strerror(errno));
  }

  if (!fresh) {
    std::vector<std::string> families;
    rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(setup_.db, path_, &families);
    if (!ls.ok()) return FromRocks(ls, "open store " + path_);
    if (std::find(families.begin(), families.end(), kMetaCf) == families.end()) {
      return Status::InvalidArgument(path_ + " is a RocksDB database but not an auxstore store");
    }
  }

  if (!fresh && !options_.read_only) AUXSTORE_RETURN_IF_ERROR(CheckNotLockedElsewhere());

  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs;
  if (options_.read_only) {
    rs = rocksdb::DB::OpenForReadOnly(setup_.db, path_, setup_.cfs, &cf_, &raw);
  } else {
    rs = rocksdb::DB::Open(setup_.db, path_, setup_.cfs, &cf_, &raw);
    if (!rs.ok()) {
      // Table files RocksDB dropped after a failed write may be named by its
      // MANIFEST after all (deferred_delete_fs.h): put them back and retry.
      auto restored = RestoreTrash(path_);
      if (restored.ok() && *restored > 0) {
        cf_.clear();
        rs = rocksdb::DB::Open(setup_.db, path_, setup_.cfs, &cf_, &raw);
      }
    }
    if (rs.ok()) PurgeTrash(path_);  // RocksDB removed what it does not name
  }
  if (!rs.ok()) {
    if (rs.IsIOError() && rs.ToString().find("lock") != std::string::npos) {
      return Status::Busy("store " + path_ + " is open for writing by another process (" +
                          rs.ToString() + ")");
    }
    return FromRocks(rs, "open store " + path_);
  }
  db_.reset(raw);

  AUXSTORE_RETURN_IF_ERROR(CheckFormatVersion(fresh));
  AUXSTORE_RETURN_IF_ERROR(LoadMetaCounters());
  AUXSTORE_RETURN_IF_ERROR(CheckWatermark(fresh));
  if (!options_.read_only) {
    // Ingest files of a put that crashed half-way are never referenced.
    fs::remove_all(path_ + "/" + kIngestDir, ec);
    fs::create_directory(path_ + "/" + kIngestDir, ec);
    if (ec) return Status::IOError("create " + path_ + "/" + kIngestDir + ": " + ec.message());
    ::chmod((path_ + "/" + kIngestDir).c_str(), 0700);
  }
  return Status::Ok();
}

// Refuses before RocksDB touches the directory (it would create or rotate
// its LOG even when the lock then fails): another process holds the LOCK.
Status DbStore::CheckNotLockedElsewhere() {
  const std::string lock_file = path_ + "/LOCK";
  int fd = ::open(lock_file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Ok();  // none yet: nobody holds it
  struct flock probe = {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_GETLK, &probe);
  ::close(fd);
  if (rc == 0 && probe.l_type != F_UNLCK) {
    return Status::Busy("store " + path_ + " is open for writing by another process (pid " +
                        std::to_string(probe.l_pid) + ")");
  }
  return Status::Ok();
}

Status DbStore::CheckFormatVersion(bool fresh) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kMeta], kFormatVersionKey, &value);
  if (s.IsNotFound() && fresh && !options_.read_only) {
    rocksdb::WriteOptions wo;
    wo.sync = true;
    return Guard(db_->Put(wo, cf_[kMeta], kFormatVersionKey,
                          EncodeMetaU64(kFormatVersionKey, kStoreFormatVersion)),
                 "record the store format version");
  }
  if (s.IsNotFound()) {
    return Status::Corruption("store " + path_ + " has no format version record");
  }
  if (!s.ok()) return FromRocks(s, "read the store format version");
  AUXSTORE_ASSIGN_OR_RETURN(uint64_t version, DecodeMetaU64(kFormatVersionKey, value));
  if (version != kStoreFormatVersion) {
    return Status::NotSupported("store " + path_ + " has format version " +
                                std::to_string(version) + "; this build reads version " +
                                std::to_string(kStoreFormatVersion) +
                                (version > kStoreFormatVersion ? " (it was written by a newer "
                                                                 "auxstore)"
                                                               : ""));
  }
  return Status::Ok();
}

Status DbStore::LoadMetaCounters() {
  for (auto [key, target] :
       {std::pair{kCommitSeqKey, &commit_seq_}, std::pair{kQuarantinesKey, &quarantines_}}) {
    std::string value;
    rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kMeta], key, &value);
    if (s.IsNotFound()) {
      *target = 0;
      continue;
    }
    if (!s.ok()) return FromRocks(s, std::string("read ") + key);
    AUXSTORE_ASSIGN_OR_RETURN(*target, DecodeMetaU64(key, value));
  }
  return Status::Ok();
}

Status DbStore::CheckWatermark(bool fresh) {
  Result<uint64_t> wm = ReadWatermark(path_);
  if (!wm.ok() && !wm.error().IsNotFound()) {
    if (!options_.accept_data_loss) return wm.error();
    wm = uint64_t{0};
  }
  if (!wm.ok()) {  // missing
    if (!fresh && commit_seq_ > 0 && !options_.accept_data_loss) {
      return Status::Corruption("store " + path_ + " has lost its durable watermark file (" +
                                kWatermarkFileName +
                                "); its commits cannot be vouched for. Run "
                                "`auxstore verify`, then open with accept_data_loss");
    }
    watermark_ = 0;
  } else {
    watermark_ = *wm;
  }
  if (commit_seq_ < watermark_) {
    lost_commits_at_open_ = watermark_ - commit_seq_;
    if (!options_.accept_data_loss) {
      return Status::Corruption(
          "store " + path_ + " lost committed snapshots: the durable watermark is commit " +
          std::to_string(watermark_) + " but RocksDB recovered only up to commit " +
          std::to_string(commit_seq_) +
          " (a truncated WAL or MANIFEST?). Open with "
          "accept_data_loss to continue with what is left");
    }
  }
  if (options_.read_only) return Status::Ok();
  // Everything recovered is now durable in RocksDB's files: vouch for it.
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->SyncWAL(), "sync the WAL at open"));
  if (lost_commits_at_open_ > 0) {
    // The loss was accepted: the watermark comes down to what is really
    // there, so later opens check new commits against the truth.
    AUXSTORE_RETURN_IF_ERROR(WriteWatermark(path_, commit_seq_));
    watermark_ = commit_seq_;
    return Status::Ok();
  }
  return AdvanceWatermark(commit_seq_);
}

}  // namespace store_internal
}  // namespace auxstore

namespace auxstore::store_internal {

Result<std::unique_ptr<Store>> OpenStoreOnFileSystem(const Options& options,
                                                     const std::string& path,
                                                     std::shared_ptr<rocksdb::FileSystem> fs) {
  return DbStore::Open(options, path, std::move(fs));
}

}  // namespace auxstore::store_internal
