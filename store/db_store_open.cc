#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <thread>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "store/db_store.h"
#include "store/manifest_tail.h"
#include "store/meta_keys.h"
#include "store/open_on_file_system.h"
#include "store/rocks/capped_manifest_fs.h"
#include "store/rocks/current_override_fs.h"
#include "store/rocks/deferred_delete_fs.h"
#include "store/rocks/held_files_fs.h"
#include "store/shared_open.h"
#include "store/store_dir.h"
#include "store/table_precheck.h"
#include "store/watermark.h"

namespace auxstore {

Result<std::unique_ptr<Store>> Store::Open(const Options& options, const std::string& path) {
  if (!options.shared.empty()) return shared::OpenTieredStore(options, path);
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

void DbStore::Log(LogLevel level, const std::string& message) const {
  if (level < options_.log_level) return;
  Deliver(options_.log_sink, LogRecord{level, "auxstore", "store " + path_ + ": " + message});
}

namespace {

// A reader holds the table files it opened (held_files_fs.h): a live
// writer's deletions never look like damage to it.
std::shared_ptr<rocksdb::FileSystem> FileSystemFor(const Options& options,
                                                   std::shared_ptr<rocksdb::FileSystem> fs) {
  if (!options.read_only) return fs;
  return NewHeldFilesFileSystem(fs ? std::move(fs) : rocksdb::FileSystem::Default());
}

// Whether RocksDB's read-write recovery of the store at `path` will write
// its WALs out to SSTs. 7.8.3 keeps recovered WALs in memtables
// (avoid_flush_during_recovery) only while each fits: once one is full
// (MemTable::ShouldFlushNow, about 95% of write_buffer_size) it is flushed,
// and then every memtable at the end. A read-only open replays the WALs
// without ever flushing, so its memtable sizes say what the real one meets.
// True (the safe answer) when the store cannot be read.
bool RecoveryFlushes(const RocksSetup& setup, const std::string& path) {
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  if (!rocksdb::DB::OpenForReadOnly(setup.db, path, setup.cfs, &handles, &raw).ok()) return true;
  bool flushes = false;
  for (size_t i = 0; i < handles.size(); ++i) {
    uint64_t used = 0;
    const uint64_t full = setup.cfs[i].options.write_buffer_size / 10 * 9;
    if (!raw->GetIntProperty(handles[i], "rocksdb.cur-size-active-mem-table", &used) ||
        used >= full) {
      flushes = true;
    }
  }
  for (auto* h : handles) (void)raw->DestroyColumnFamilyHandle(h);
  delete raw;
  return flushes;
}

}  // namespace

}  // namespace store_internal

size_t DefaultRestoreLanes(unsigned cores) { return std::clamp<size_t>(cores / 2, 2, 8); }

namespace store_internal {
namespace {

size_t ReadLanes(const Options& o) {
  return o.read_lanes == 0 ? DefaultRestoreLanes() : o.read_lanes;
}

}  // namespace

DbStore::DbStore(const Options& options, std::string path, std::shared_ptr<rocksdb::FileSystem> fs)
    : options_(options),
      path_(std::move(path)),
      setup_(MakeRocksSetup(FileSystemFor(options, std::move(fs)), options.log_sink,
                            options.log_level)),
      read_lanes_(ReadLanes(options)),
      read_pool_(std::max<size_t>(2, read_lanes_)),
      work_pool_(options.work_threads) {
  if (read_lanes_ > 1) lane_pool_.emplace(read_lanes_ - 1);
  setup_.db.listeners.push_back(table_deletions_);
}

Result<std::unique_ptr<Store>> DbStore::Open(const Options& options, const std::string& path,
                                             std::shared_ptr<rocksdb::FileSystem> fs) {
  if (path.empty()) return Status::InvalidArgument("store path is empty");
  if (options.chunk_bytes == 0) return Status::InvalidArgument("Options.chunk_bytes is 0");
  if (options.chunk_bytes > (1u << 30)) {
    return Status::InvalidArgument("Options.chunk_bytes is over 1 GiB");
  }
  if (options.work_threads == 0) return Status::InvalidArgument("Options.work_threads is 0");
  if (options.read_lanes > Options::kMaxReadLanes) {
    return Status::InvalidArgument("Options.read_lanes is " + std::to_string(options.read_lanes) +
                                   ", at most " + std::to_string(Options::kMaxReadLanes));
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
  table_deletions_->Attach(nullptr);
  direct_.reset();
  for (auto* h : cf_) {
    if (h) (void)db_->DestroyColumnFamilyHandle(h);
  }
  cf_.clear();
  (void)db_->Close();
  db_.reset();
}

// Every refusal for what the directory holds happens before anything in it
// changes: InspectStoreDir only looks, the writer's lock is taken only in a
// new, empty or store directory, and an existing store is first opened
// read-only, which writes nothing, for every check that can refuse it.
Status DbStore::OpenDb() {
  AUXSTORE_ASSIGN_OR_RETURN(DirCheck dir, InspectStoreDir(path_));
  if (options_.read_only) {
    if (dir.state != DirState::kStore) return RefusalFor(path_, dir);
    ReadThroughOlderManifest(dir);
    had_store_marker_ = HasStoreMarker(path_);
    // Before anything makes RocksDB open a table file (table_precheck.h).
    AUXSTORE_RETURN_IF_ERROR(CheckTablePropertiesBlocks(path_));
    return OpenForReading();
  }
  bool created_dir = false;
  if (dir.state == DirState::kAbsent || dir.state == DirState::kEmpty) {
    if (!options_.create_if_missing) return RefusalFor(path_, dir);
    if (dir.state == DirState::kAbsent) {
      AUXSTORE_ASSIGN_OR_RETURN(created_dir, CreateStoreDir(path_));
    }
  } else if (dir.state != DirState::kStore) {
    return RefusalFor(path_, dir);
  }
  // Taken before the lock file exists for sure: only a store leaves one.
  had_store_marker_ = HasStoreMarker(path_);
  AUXSTORE_ASSIGN_OR_RETURN(lock_, WriterLock::Acquire(path_));
  // Under the lock, what a concurrent creator or writer left is settled.
  AUXSTORE_ASSIGN_OR_RETURN(dir, InspectStoreDir(path_));
  if (dir.state == DirState::kEmpty) return CreateDb(created_dir);
  if (dir.state != DirState::kStore) return RefusalFor(path_, dir);
  ReadThroughOlderManifest(dir);
  // Before anything makes RocksDB open a table file (table_precheck.h).
  AUXSTORE_RETURN_IF_ERROR(CheckTablePropertiesBlocks(path_));
  AUXSTORE_ASSIGN_OR_RETURN(Families families, CheckFamilies());
  // A creation killed before RocksDB made every column family: finish it.
  if (families == Families::kIncomplete) return CreateDb(/*created_dir=*/false);
  return OpenExistingDb(dir);
}

// Before RocksDB opens a store for real: a RocksDB database of someone
// else's must not get the store's column families created in it, and a
// store whose creation stopped half-way (RocksDB creates the column families
// one MANIFEST edit at a time) is told apart from both.
Result<DbStore::Families> DbStore::CheckFamilies() {
  std::vector<std::string> families;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(setup_.db, path_, &families);
  std::string finding;
  if (ls.IsCorruption() && SkipBrokenManifestTail(finding)) {
    families.clear();
    ls = rocksdb::DB::ListColumnFamilies(setup_.db, path_, &families);
  }
  if (!ls.ok()) {
    return Status::Corruption("store " + path_ +
                              " is damaged: RocksDB cannot read the column families from its "
                              "MANIFEST (" +
                              ls.ToString() + (finding.empty() ? "" : "; " + finding) + ")");
  }
  size_t ours = 0;
  for (const auto& cf : setup_.cfs) {
    ours += std::find(families.begin(), families.end(), cf.name) != families.end();
  }
  if (ours == setup_.cfs.size()) return Families::kComplete;
  // Only the store creates AUXSTORE-LOCK / the watermark beside a RocksDB
  // database, and it creates every family before it writes anything else.
  if (!had_store_marker_ || families.size() > ours) {
    return Status::InvalidArgument(path_ + " is a RocksDB database but not an auxstore store");
  }
  // A store of an older format has fewer families: its version record says
  // so (read on a read-only handle of the families it has; nothing changes).
  if (std::find(families.begin(), families.end(), kMetaCf) != families.end()) {
    AUXSTORE_ASSIGN_OR_RETURN(std::optional<uint64_t> version, PeekFormatVersion(families));
    if (version && *version != kStoreFormatVersion) {
      return FormatVersionRefusal(path_, *version);
    }
  }
  // A creation commits nothing before every family exists: a store that
  // vouched for commits and now lacks a family lost MANIFEST edits.
  if (auto wm = ReadWatermark(path_); wm.ok() && *wm > 0) {
    return Status::Corruption("store " + path_ +
                              " is damaged: its RocksDB MANIFEST lost column families although "
                              "the durable watermark vouches for " +
                              std::to_string(*wm) + " commits. Nothing was changed");
  }
  return Families::kIncomplete;
}

// A power cut that kept a MANIFEST's unsynced tail with garbage in it (an
// edit RocksDB appended, never synced, so never acknowledged: found by
// power_loss_test, cycle 158 of the issue 20 soak) is read as if the cut had
// dropped that tail: the MANIFEST is read up to its last valid record. The
// file is not changed (a read-write open writes a new MANIFEST anyway), and
// the watermark check that follows every open refuses the store if an
// acknowledged commit is missing. Damage with a valid record after it is
// never skipped.
bool DbStore::SkipBrokenManifestTail(std::string& finding) {
  if (capped_env_) return false;  // one cap per store handle
  std::string current = ReadCurrent(path_);
  while (!current.empty() && (current.back() == '\n' || current.back() == '\r')) current.pop_back();
  if (current.empty() || current.find('/') != std::string::npos) return false;
  const std::string manifest = path_ + "/" + current;
  Result<ManifestTailScan> scan = ScanManifestFile(manifest);
  if (!scan.ok()) return false;
  if (scan->verdict != ManifestTailScan::Verdict::kBrokenTail) {
    if (!scan->why.empty()) finding = current + ": " + scan->why;
    return false;
  }
  capped_env_ = rocksdb::NewCompositeEnv(
      NewCappedManifestFileSystem(setup_.env->GetFileSystem(), manifest, scan->valid_bytes));
  setup_.db.env = capped_env_.get();
  Log(LogLevel::kWarn, "reading " + current + " up to byte " + std::to_string(scan->valid_bytes) +
                           " of " + std::to_string(scan->file_bytes) + " (" + scan->why +
                           "): an unsynced tail a power cut left damaged; the watermark check "
                           "decides whether anything durable is missing");
  return true;
}

void DbStore::ReadThroughOlderManifest(const DirCheck& dir) {
  if (dir.missing_manifest.empty() || current_env_) return;
  current_env_ = rocksdb::NewCompositeEnv(
      NewCurrentOverrideFileSystem(setup_.env->GetFileSystem(), path_, dir.manifest));
  setup_.db.env = current_env_.get();
  Log(LogLevel::kWarn, "CURRENT names " + dir.missing_manifest +
                           ", which is missing (a power cut kept CURRENT's rename and dropped "
                           "the new MANIFEST's directory entry): reading " +
                           dir.manifest +
                           ", the one before it; the watermark check decides whether anything "
                           "durable is missing");
}

Status DbStore::OpenRocks(bool read_only, bool create) {
  rocksdb::DBOptions db = setup_.db;
  db.create_if_missing = create;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = OpenRocksWith(db, read_only, &raw);
  if (rs.IsCorruption()) {
    // A WAL whose unsynced tail a power cut left with garbage in it (a file
    // system may keep an appended tail's size but not its bytes) is refused
    // by kTolerateCorruptedTailRecords. Replay up to the first bad record
    // instead: every commit acknowledged as durable was synced before that
    // tail, and the watermark check that follows every open refuses the store
    // if one is missing (found by power_loss_test's garbled tails).
    db.wal_recovery_mode = rocksdb::WALRecoveryMode::kPointInTimeRecovery;
    rocksdb::Status pit = OpenRocksWith(db, read_only, &raw);
    if (pit.ok()) {
      Log(LogLevel::kWarn,
          "recovered " + path_ + " up to the first damaged WAL record (" + rs.ToString() +
              "); the watermark check decides whether anything durable is missing");
      // RocksDB skips every WAL after the damaged one on later opens too:
      // flush now, so the damaged WAL is obsolete before anything new lands
      // behind it.
      if (!read_only) {
        rocksdb::Status flushed = raw->Flush(rocksdb::FlushOptions(), cf_);
        if (!flushed.ok()) {
          for (auto* h : cf_) (void)raw->DestroyColumnFamilyHandle(h);
          cf_.clear();
          delete raw;
          return FromRocks(flushed, "flush " + path_ + " after recovering past a damaged WAL");
        }
      }
    }
    rs = pit;
  }
  if (!rs.ok()) {
    cf_.clear();
    if (rs.IsCorruption() || rs.IsPathNotFound()) {
      return Status::Corruption("store " + path_ +
                                " is damaged: RocksDB cannot recover it from its MANIFEST and "
                                "WAL files (" +
                                rs.ToString() + ")" + RepairHintFor(path_, rs.ToString()));
    }
    return FromRocks(rs, "open store " + path_);
  }
  db_.reset(raw);
  db_read_only_ = read_only;
  if (cf_.size() > kRecords) {
    direct_ = std::make_unique<DirectRecords>(db_.get(), cf_[kRecords]);
    table_deletions_->Attach(direct_.get());
  }
  return Status::Ok();
}

rocksdb::Status DbStore::OpenRocksWith(const rocksdb::DBOptions& db, bool read_only,
                                       rocksdb::DB** raw) {
  cf_.clear();
  return read_only ? rocksdb::DB::OpenForReadOnly(db, path_, setup_.cfs, &cf_, raw)
                   : rocksdb::DB::Open(db, path_, setup_.cfs, &cf_, raw);
}

// The checks every open runs once RocksDB recovered the store.
Status DbStore::CheckRecovered(bool fresh, Result<uint64_t> watermark) {
  AUXSTORE_RETURN_IF_ERROR(LoadMetaCounters());
  // A creation killed after RocksDB made the store but before it recorded
  // its format version and first watermark (found by kill9_test --cycles
  // 1000): nothing was committed yet, so the creation is finished now.
  if (!fresh && watermark.status().IsNotFound() && commit_seq_ == 0) {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf_[kManifests]));
    it->SeekToFirst();
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "look for manifests"));
    fresh = !it->Valid();
  }
  AUXSTORE_RETURN_IF_ERROR(CheckFormatVersion(fresh));
  return CheckWatermark(fresh, std::move(watermark));
}

Status DbStore::CreateDb(bool created_dir) {
  const DirListing before = ListDir(path_);
  Status s = OpenRocks(/*read_only=*/false, /*create=*/true);
  if (s.ok()) s = CheckRecovered(/*fresh=*/true, ReadWatermark(path_));
  if (s.ok()) s = MakePrivateDir(path_ + "/" + kIngestDir);
  if (s.ok()) return Status::Ok();
  // Nothing was committed: leave the directory as it was found.
  CloseDb();
  (void)UndoFailedOpen(path_, before, ReadCurrent(path_));
  if (created_dir) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  return s;
}

Status DbStore::ProbeReadOnly() {
  Result<uint64_t> wm = ReadWatermark(path_);
  AUXSTORE_RETURN_IF_ERROR(CheckFamilies().status());
  Status s = OpenRocks(/*read_only=*/true, /*create=*/false);
  if (s.ok()) s = CheckRecovered(/*fresh=*/false, std::move(wm));
  CloseDb();
  return s;
}

Status DbStore::OpenExistingDb(const DirCheck& dir) {
  Status probe = ProbeReadOnly();
  if (!probe.ok()) {
    // Table files RocksDB dropped after a failed write may be named by its
    // MANIFEST after all (deferred_delete_fs.h): put them back and retry.
    auto restored = RestoreTrash(path_);
    if (restored.ok() && *restored > 0) {
      Log(LogLevel::kWarn, "put back " + std::to_string(*restored) +
                               " table files kept after a failed write, and opened again");
      probe = ProbeReadOnly();
    }
  }
  AUXSTORE_RETURN_IF_ERROR(probe);
  const auto recovery_flushes = [this] { return RecoveryFlushes(setup_, path_); };
  AUXSTORE_RETURN_IF_ERROR(CheckSpaceToOpen(path_, dir.manifest, recovery_flushes));
  const DirListing before = ListDir(path_);
  const TrashListing trash_before = ListTrash(path_);
  const std::string current = ReadCurrent(path_);
  Status s = OpenRocks(/*read_only=*/false, /*create=*/false);
  if (!s.ok()) {
    // What RocksDB created and then dropped into the trash goes too.
    UndoTrash(path_, trash_before, before);
    const bool undone = UndoFailedOpen(path_, before, current);
    Status space = CheckSpaceToOpen(path_, dir.manifest, recovery_flushes);
    if (!space.ok()) s = space.WithContext(s.message());
    return undone ? s.WithContext("nothing was changed") : s;
  }
  PurgeTrash(path_);  // RocksDB removed what its MANIFEST does not name
  if (::chmod(path_.c_str(), 0700) != 0) {
    return Status::IOError("chmod 0700 " + path_ + ": " + std::strerror(errno));
  }
  AUXSTORE_RETURN_IF_ERROR(CheckRecovered(/*fresh=*/false, ReadWatermark(path_)));
  // Ingest files of a put that crashed half-way are never referenced.
  std::error_code ec;
  std::filesystem::remove_all(path_ + "/" + kIngestDir, ec);
  return MakePrivateDir(path_ + "/" + kIngestDir);
}

// A reader beside a live writer: RocksDB's read-only open reads CURRENT, the
// MANIFEST and the WALs at slightly different moments, and the writer may
// ingest, flush, switch WALs or delete one in between. Such an open can fail
// (a WAL that vanished), recover fewer commits than the watermark read just
// before (a flush the MANIFEST read missed, its WAL gone), or, worse, see a
// manifest from the WAL whose records were ingested after its MANIFEST read
// (a torn view). None of that is damage: an open whose MANIFEST changed
// while it ran is thrown away and retried (ChangeFingerprint). A failure
// with nothing changed around it is the store's own.
Status DbStore::OpenForReading() {
  constexpr int kAttempts = 12;
  Status last;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    const std::string before = ChangeFingerprint(path_);
    Result<uint64_t> wm = ReadWatermark(path_);
    auto families = CheckFamilies();
    if (!families.ok()) return families.status();
    if (*families == Families::kIncomplete) {
      return Status::NotFound("no auxstore store at " + path_ +
                              ": its creation was interrupted (opening it for writing finishes "
                              "it)");
    }
    last = OpenRocks(/*read_only=*/true, /*create=*/false);
    if (last.ok()) last = CheckRecovered(/*fresh=*/false, std::move(wm));
    const bool changed = ChangeFingerprint(path_) != before;
    if (last.ok() && !changed) return last;
    CloseDb();
    if (!changed) return last;
    if (last.ok()) last = Status::Busy("the MANIFEST changed during the open");
    std::this_thread::sleep_for(std::chrono::milliseconds(2 << std::min(attempt, 6)));
  }
  return Status::Busy(
      "store " + path_ + " kept changing under a read-only open (" + std::to_string(kAttempts) +
      " attempts raced a live writer; the last one: " + last.message() + "); try again");
}

Status FormatVersionRefusal(const std::string& path, uint64_t version) {
  std::string why = "store " + path + " has format version " + std::to_string(version) +
                    "; this build reads version " + std::to_string(kStoreFormatVersion);
  if (version == 1) {
    return Status::NotSupported(why +
                                " (pages shared across snapshots). Convert it offline with "
                                "`auxstore migrate " +
                                path + "` (crash-safe; the old store is kept at " + path +
                                ".v1); nothing was changed");
  }
  return Status::NotSupported(why + (version > kStoreFormatVersion
                                         ? " (it was written by a newer auxstore); nothing was "
                                           "changed"
                                         : "; nothing was changed"));
}

Result<std::optional<uint64_t>> DbStore::PeekFormatVersion(
    const std::vector<std::string>& families) {
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  size_t meta = 0;
  for (const std::string& name : families) {
    rocksdb::ColumnFamilyOptions o;
    for (const auto& mine : setup_.cfs) {
      if (mine.name == name) o = mine.options;
    }
    if (name == kMetaCf) meta = cfs.size();
    cfs.emplace_back(name, o);
  }
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = rocksdb::DB::OpenForReadOnly(setup_.db, path_, cfs, &handles, &raw);
  if (!rs.ok()) return std::optional<uint64_t>();  // the open proper reports it
  std::string value;
  rocksdb::Status g = raw->Get(rocksdb::ReadOptions(), handles[meta], kFormatVersionKey, &value);
  for (auto* h : handles) (void)raw->DestroyColumnFamilyHandle(h);
  delete raw;
  if (!g.ok()) return std::optional<uint64_t>();
  auto v = DecodeMetaU64(kFormatVersionKey, value);
  if (!v.ok()) return std::optional<uint64_t>();
  return std::optional<uint64_t>(*v);
}

Status DbStore::CheckFormatVersion(bool fresh) {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kMeta], kFormatVersionKey, &value);
  if (s.IsNotFound() && fresh) {
    if (db_read_only_) return Status::Ok();  // the writer's open records it
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
  if (version != kStoreFormatVersion) return FormatVersionRefusal(path_, version);
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

Status DbStore::CheckWatermark(bool fresh, Result<uint64_t> wm) {
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
  if (db_read_only_) return Status::Ok();
  // Everything recovered is now durable in RocksDB's files: vouch for it.
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->SyncWAL(), "sync the WAL at open"));
  if (lost_commits_at_open_ > 0) {
    Log(LogLevel::kWarn, "opened accepting the loss of " + std::to_string(lost_commits_at_open_) +
                             " committed snapshots (accept_data_loss)");
    // The loss was accepted: the watermark comes down to what is really
    // there, so later opens check new commits against the truth.
    AUXSTORE_RETURN_IF_ERROR(WriteWatermark(*setup_.env->GetFileSystem(), path_, commit_seq_));
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
