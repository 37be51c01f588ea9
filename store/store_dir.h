// The store's directory before RocksDB sees it: what is in it, who holds it
// for writing, whether there is room to open it, and undoing an open that
// failed. Everything here that looks runs before anything in the directory
// changes, so an open refused for what it found leaves the directory as it
// was (docs/durability.md, "Opening").
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "auxstore/status.h"
#include "store/rocks/private_dir.h"

namespace auxstore::store_internal {

inline constexpr const char* kWriterLockFileName = "AUXSTORE-LOCK";

enum class DirState {
  kAbsent,   // nothing at the path
  kEmpty,    // an empty directory, or one a creation left before it committed anything
  kStore,    // RocksDB's CURRENT is there and names a MANIFEST that is there
  kForeign,  // a non-empty directory with no store file in it
  kDamaged,  // a store whose RocksDB CURRENT or MANIFEST is missing or damaged
};

struct DirCheck {
  DirState state = DirState::kAbsent;
  std::string problem;   // kForeign / kDamaged: what was found, for the message
  std::string manifest;  // kStore: the MANIFEST CURRENT names (or, below, the one read instead)
  // kStore: CURRENT names this MANIFEST, which is missing, and `manifest` is
  // the newest older one there is. A power cut can keep CURRENT's rename
  // and drop the new MANIFEST's directory entry (RocksDB makes no directory
  // fsync between the two): the open reads through `manifest`, as CURRENT
  // named it before (current_override_fs.h), and the watermark decides.
  std::string missing_manifest;
};

// Looks at `path` and changes nothing. InvalidArgument when the path is not
// a directory, or holds a symbolic link (a store never does; following one
// would let whoever planted it redirect the store's writes).
Result<DirCheck> InspectStoreDir(const std::string& path);

// The Status an open returns for a directory in `check.state` it cannot use.
Status RefusalFor(const std::string& path, const DirCheck& check);

// Creates the store directory, mode 0700 whatever the umask. Its parent must
// exist (NotFound otherwise: nothing outside the store is ever created).
// Returns false when another process created it first.
Result<bool> CreateStoreDir(const std::string& path);

// The writer's lock: flock(2) on AUXSTORE-LOCK, held for the life of the
// object. It excludes every other writer in any process, this one included:
// an flock belongs to its open file description, so opening or closing other
// descriptors of the file (in this process or another) cannot release it —
// unlike RocksDB's POSIX fcntl LOCK, which any close(2) of the file in the
// same process drops (issue 12 finding 1).
class WriterLock {
 public:
  // Busy when another handle holds it.
  static Result<WriterLock> Acquire(const std::string& dir);
  // The same, but creates nothing: when `dir` has no AUXSTORE-LOCK (a store
  // of an older release), no writer of this build holds it and an unheld
  // lock is returned. For `migrate`, which keeps the old store byte for byte.
  static Result<WriterLock> AcquireIfPresent(const std::string& dir);
  WriterLock() = default;
  WriterLock(WriterLock&& o) noexcept : fd_(o.fd_) { o.fd_ = -1; }
  WriterLock& operator=(WriterLock&& o) noexcept;
  ~WriterLock();
  bool held() const { return fd_ >= 0; }

 private:
  explicit WriterLock(int fd) : fd_(fd) {}
  // flock(LOCK_EX | LOCK_NB) on `fd` (closed on failure); `owner_only`:
  // then chmod 0600.
  static Result<WriterLock> Take(const std::string& dir, int fd, bool owner_only);
  int fd_ = -1;
};

// IOError naming how many bytes must be free when the file system holding
// `dir` has less than an open of this store can write: a new MANIFEST (no
// larger than `manifest`), an OPTIONS file, a new WAL and the watermark;
// and, when `recovery_flushes()` says RocksDB's recovery will write the
// recovered WALs out to SSTs (rocks_options.cc: it keeps them only while
// every memtable fits), about the WALs' size again. `recovery_flushes` is
// asked only when the answer matters (free space short of the larger
// figure). Once the stated bytes are free the open needs no more.
Status CheckSpaceToOpen(const std::string& dir, const std::string& manifest,
                        const std::function<bool()>& recovery_flushes);

// Names and sizes of the directory's entries (one level).
using DirListing = std::map<std::string, uint64_t>;
DirListing ListDir(const std::string& dir);

// After a failed RocksDB open: removes the files that are not in `before`,
// but only when CURRENT still holds what it held (so nothing the attempt
// created can be referenced). Returns whether it cleaned up.
bool UndoFailedOpen(const std::string& dir, const DirListing& before,
                    const std::string& current_before);

// Whether `dir` holds a file only the store creates (AUXSTORE-LOCK, the
// watermark): a RocksDB database there is the store's own.
bool HasStoreMarker(const std::string& dir);

// CURRENT's content ("" when missing).
std::string ReadCurrent(const std::string& dir);

// CURRENT and every MANIFEST's name, size and mtime: what changes whenever a
// writer ingests, flushes, switches or deletes a WAL, or compacts. Equal
// fingerprints taken around a read-only open mean the open's view is one
// the writer really had: the WAL records it replayed depend on no MANIFEST
// change it missed (a writer records an ingest in the MANIFEST before the
// manifest that names it goes to the WAL, and deletes a WAL only after the
// flush that replaces it is in the MANIFEST).
std::string ChangeFingerprint(const std::string& dir);

}  // namespace auxstore::store_internal
