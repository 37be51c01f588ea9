#include "store/store_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <vector>

#include "store/meta_keys.h"
#include "store/rocks/deferred_delete_fs.h"
#include "store/watermark.h"

namespace auxstore::store_internal {
namespace {

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

bool IsTableFile(std::string_view n) {
  return EndsWith(n, ".sst") || EndsWith(n, ".ldb") || EndsWith(n, ".blob");
}

// Files RocksDB or the store create that hold no committed data by
// themselves: a directory with only these is an empty store or one whose
// creation stopped before it committed anything.
bool IsBookkeepingName(std::string_view n) {
  return n == "IDENTITY" || n == "LOCK" || n == kWriterLockFileName || n == "LOG" ||
         n.starts_with("LOG.old.") || n.starts_with("OPTIONS-") || EndsWith(n, ".dbtmp") ||
         n == std::string(kWatermarkFileName) + ".tmp" || n == kIngestDir || n == kTrashDir ||
         n.starts_with("MANIFEST-") || EndsWith(n, ".log");
}

struct Entry {
  std::string name;
  struct stat st;
};

Status ListEntries(const std::string& path, std::vector<Entry>* out) {
  DIR* d = ::opendir(path.c_str());
  if (d == nullptr) return Errno("read directory " + path);
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    Entry entry{name, {}};
    if (::fstatat(::dirfd(d), name.c_str(), &entry.st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // removed meanwhile
      Status s = Errno("stat " + path + "/" + name);
      ::closedir(d);
      return s;
    }
    out->push_back(std::move(entry));
  }
  ::closedir(d);
  return Status::Ok();
}

bool DirHasEntries(const std::string& path) {
  std::vector<Entry> entries;
  return ListEntries(path, &entries).ok() && !entries.empty();
}

// CURRENT must be "MANIFEST-<digits>\n" naming a non-empty regular file.
DirCheck CheckCurrent(const std::string& path, const std::vector<Entry>& entries) {
  const std::string current = ReadCurrent(path);
  DirCheck c;
  c.state = DirState::kDamaged;
  std::string name = current;
  if (!name.empty() && name.back() == '\n') name.pop_back();
  const bool well_formed = current.size() >= 2 && current.back() == '\n' &&
                           name.starts_with("MANIFEST-") && name.size() > 9 &&
                           name.find_first_not_of("0123456789", 9) == std::string::npos;
  if (!well_formed) {
    c.problem = current.empty() ? "its RocksDB CURRENT file is empty"
                                : "its RocksDB CURRENT file is damaged (it does not name a "
                                  "MANIFEST file)";
    return c;
  }
  for (const Entry& e : entries) {
    if (e.name != name) continue;
    if (!S_ISREG(e.st.st_mode)) break;
    if (e.st.st_size == 0) {
      c.problem = "its RocksDB MANIFEST " + name + " (named by CURRENT) is empty";
      return c;
    }
    c.state = DirState::kStore;
    c.manifest = name;
    return c;
  }
  c.problem = "its RocksDB CURRENT file names " + name + ", which is missing";
  // The newest older MANIFEST, when there is one: RocksDB deletes the one
  // before only after CURRENT names the new one durably.
  auto number = [](const std::string& manifest, uint64_t* n) {
    const char* first = manifest.data() + 9;
    const char* last = manifest.data() + manifest.size();
    auto [end, ec] = std::from_chars(first, last, *n);
    return ec == std::errc() && end == last && first != last;
  };
  uint64_t missing = 0, best = 0;
  if (!number(name, &missing)) return c;
  for (const Entry& e : entries) {
    uint64_t n = 0;
    if (!e.name.starts_with("MANIFEST-") || !number(e.name, &n) || !S_ISREG(e.st.st_mode) ||
        e.st.st_size == 0) {
      continue;
    }
    if (n < missing && n >= best) {
      best = n;
      c.manifest = e.name;
    }
  }
  if (!c.manifest.empty()) {
    c.state = DirState::kStore;
    c.missing_manifest = name;
    c.problem.clear();
  }
  return c;
}

}  // namespace

bool HasStoreMarker(const std::string& dir) {
  struct stat st;
  for (const char* name : {kWriterLockFileName, kWatermarkFileName}) {
    if (::lstat((dir + "/" + name).c_str(), &st) == 0 && S_ISREG(st.st_mode)) return true;
  }
  return false;
}

std::string ReadCurrent(const std::string& dir) {
  int fd = ::open((dir + "/CURRENT").c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return "";
  char buf[128];
  ssize_t n = ::read(fd, buf, sizeof buf);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

Result<DirCheck> InspectStoreDir(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return DirCheck{};
    return Errno("stat " + path);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(path + " is not a directory (a store is a directory)");
  }
  std::vector<Entry> entries;
  AUXSTORE_RETURN_IF_ERROR(ListEntries(path, &entries));
  bool current = false, data = false;
  std::string foreign;
  for (const Entry& e : entries) {
    if (S_ISLNK(e.st.st_mode)) {
      return Status::InvalidArgument("store directory " + path + " holds a symbolic link, " +
                                     e.name +
                                     "; a store never does, so it was not opened (nothing was "
                                     "changed): remove the link");
    }
    const std::string_view n = e.name;
    if (n == "CURRENT") {
      current = true;
    } else if (n == kWatermarkFileName || IsTableFile(n) ||
               (EndsWith(n, ".log") && e.st.st_size > 0) ||
               (n == kTrashDir && DirHasEntries(path + "/" + e.name))) {
      data = true;
    } else if (!IsBookkeepingName(n) && foreign.empty()) {
      foreign = e.name;
    }
  }
  if (current) return CheckCurrent(path, entries);
  DirCheck c;
  if (data) {
    c.state = DirState::kDamaged;
    c.problem = "its RocksDB CURRENT file is missing";
  } else if (!foreign.empty()) {
    c.state = DirState::kForeign;
    c.problem = "it holds '" + foreign + "'";
  } else {
    c.state = DirState::kEmpty;
  }
  return c;
}

Status RefusalFor(const std::string& path, const DirCheck& check) {
  switch (check.state) {
    case DirState::kAbsent:
    case DirState::kEmpty:
      return Status::NotFound("no auxstore store at " + path);
    case DirState::kForeign:
      return Status::InvalidArgument(path + " is a non-empty directory that is not an auxstore " +
                                     "store (" + check.problem +
                                     "); a store is created only in a new or empty directory "
                                     "(nothing was changed)");
    case DirState::kDamaged:
      return Status::Corruption(
          "store " + path + " is damaged: " + check.problem +
          ". It was not opened and nothing was changed; auxstore cannot rebuild RocksDB's "
          "CURRENT or MANIFEST: restore the directory from a backup, or move it aside to start "
          "an empty store");
    case DirState::kStore:
      break;
  }
  return Status::Ok();
}

Result<bool> CreateStoreDir(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) {
    struct stat st;
    if (::stat(parent.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Status::NotFound("cannot create store " + path + ": its parent directory " +
                              parent.string() +
                              " does not exist (auxstore creates only the store's own directory)");
    }
  }
  if (::mkdir(path.c_str(), 0700) != 0) {
    if (errno == EEXIST) return false;
    return Errno("create store directory " + path);
  }
  if (::chmod(path.c_str(), 0700) != 0) return Errno("chmod 0700 " + path);
  return true;
}

Result<WriterLock> WriterLock::Acquire(const std::string& dir) {
  const std::string file = dir + "/" + kWriterLockFileName;
  int fd = ::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Errno("open " + file);
  return Take(dir, fd, /*owner_only=*/true);
}

Result<WriterLock> WriterLock::AcquireIfPresent(const std::string& dir) {
  const std::string file = dir + "/" + kWriterLockFileName;
  int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0 && errno == ENOENT) return WriterLock();
  if (fd < 0) return Errno("open " + file);
  return Take(dir, fd, /*owner_only=*/false);  // its mode is left as it is
}

Result<WriterLock> WriterLock::Take(const std::string& dir, int fd, bool owner_only) {
  const std::string file = dir + "/" + kWriterLockFileName;
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::Busy("store " + dir +
                          " is open for writing by another handle (in this or another process)");
    }
    errno = err;
    return Errno("lock " + file);
  }
  if (owner_only) (void)::fchmod(fd, 0600);
  return WriterLock(fd);
}

WriterLock& WriterLock::operator=(WriterLock&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.fd_;
    o.fd_ = -1;
  }
  return *this;
}

WriterLock::~WriterLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock
}

Status CheckSpaceToOpen(const std::string& dir, const std::string& manifest,
                        const std::function<bool()>& recovery_flushes) {
  std::vector<Entry> entries;
  AUXSTORE_RETURN_IF_ERROR(ListEntries(dir, &entries));
  uint64_t need = 1u << 20;  // OPTIONS, CURRENT, the watermark, a new WAL's first blocks
  uint64_t wal_bytes = 0;
  for (const Entry& e : entries) {
    if (!S_ISREG(e.st.st_mode)) continue;
    // The new MANIFEST is no larger than the current one.
    if (e.name == manifest) need += static_cast<uint64_t>(e.st.st_size);
    if (EndsWith(e.name, ".log")) wal_bytes += static_cast<uint64_t>(e.st.st_size);
  }
  // SSTs for every recovered WAL, when the recovery flushes: about the WAL's
  // bytes (measured: 34.08 MB of SSTs from 34.19 MB of WAL), plus a
  // sixteenth for index, filter and block trailers.
  const uint64_t flush_bytes = wal_bytes + wal_bytes / 16;
  struct statvfs vfs;
  if (::statvfs(dir.c_str(), &vfs) != 0) return Errno("statvfs " + dir);
  const uint64_t free_bytes = uint64_t{vfs.f_bavail} * vfs.f_frsize;
  if (free_bytes >= need + flush_bytes) return Status::Ok();
  const bool flushes = wal_bytes > 0 && recovery_flushes();
  if (flushes) need += flush_bytes;
  if (free_bytes >= need) return Status::Ok();
  const std::string what =
      flushes ? "a new RocksDB MANIFEST, an OPTIONS file, a new WAL, and SSTs for the " +
                    std::to_string(wal_bytes) +
                    " bytes of WAL its recovery writes out (a memtable fills during the replay)"
              : std::string("a new RocksDB MANIFEST, an OPTIONS file, a new WAL");
  return Status::IOError("store " + dir + " needs " + std::to_string(need) +
                         " bytes free to open (" + what + "), and its file system has " +
                         std::to_string(free_bytes) +
                         "; free that much and open it again (nothing was changed)");
}

DirListing ListDir(const std::string& dir) {
  DirListing out;
  std::vector<Entry> entries;
  if (!ListEntries(dir, &entries).ok()) return out;
  for (const Entry& e : entries) out[e.name] = static_cast<uint64_t>(e.st.st_size);
  return out;
}

bool UndoFailedOpen(const std::string& dir, const DirListing& before,
                    const std::string& current_before) {
  if (ReadCurrent(dir) != current_before) return false;
  std::vector<Entry> entries;
  if (!ListEntries(dir, &entries).ok()) return false;
  for (const Entry& e : entries) {
    if (before.count(e.name) || !S_ISREG(e.st.st_mode)) continue;
    (void)::unlink((dir + "/" + e.name).c_str());
  }
  return true;
}

std::string ChangeFingerprint(const std::string& dir) {
  std::string fp = ReadCurrent(dir);
  std::vector<Entry> entries;
  if (!ListEntries(dir, &entries).ok()) return fp + "|unreadable";
  for (const Entry& e : entries) {
    if (e.name.starts_with("MANIFEST-")) {
      fp += "|" + e.name + ":" + std::to_string(e.st.st_size) + ":" +
            std::to_string(e.st.st_mtim.tv_nsec) + ":" + std::to_string(e.st.st_mtim.tv_sec);
    }
  }
  return fp;
}

}  // namespace auxstore::store_internal
