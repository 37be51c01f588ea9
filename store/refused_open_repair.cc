#include "store/refused_open_repair.h"

#include <fcntl.h>
#include <rocksdb/db.h>
#include <rocksdb/metadata.h>
#include <rocksdb/options.h>
#include <rocksdb/sst_file_reader.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>

#include "store/family_rewrite.h"
#include "store/rocks/private_dir.h"
#include "store/rocks/rocks_options.h"
#include "store/store_dir.h"
#include "store/table_precheck.h"
#include "store/table_walk.h"

namespace auxstore::store_internal {
namespace {

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// "000041.sst" of RocksDB's "/000041.sst".
std::string BareName(const std::string& name) {
  return !name.empty() && name[0] == '/' ? name.substr(1) : name;
}

Status SyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::IOError("open " + dir + ": " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return Status::IOError("fsync " + dir + ": " + std::strerror(err));
  return Status::Ok();
}

Status StatusOf(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  if (s.IsCorruption()) return Status::Corruption(what + ": " + s.ToString());
  return Status::IOError(what + ": " + s.ToString());
}

struct Unopenable {
  std::string name;  // "000041.sst"
  std::string why;   // what RocksDB (or the precheck) said
};

// Why RocksDB cannot open the table `path`, or "" when it can. The
// properties block is checked first: RocksDB would assert on a damaged one.
std::string WhyUnopenable(const std::string& path) {
  Status pre = CheckTablePropertiesBlock(path);
  if (pre.IsCorruption()) return pre.message();
  if (!pre.ok()) return "";  // unreadable: an I/O problem, not this repair's
  rocksdb::Options o;
  rocksdb::SstFileReader reader(o);
  rocksdb::Status s = reader.Open(path);
  return s.IsCorruption() ? s.ToString() : "";
}

// The live table files that cannot be opened: damaged in place, or set
// aside by an earlier run of this repair that did not finish.
std::vector<Unopenable> FindUnopenable(const std::string& dir) {
  std::vector<Unopenable> out;
  for (const std::string& name : LiveTableFileNames(dir)) {
    const std::string in_place = dir + "/" + name;
    const std::string aside = dir + "/" + kDamagedDir + "/" + name;
    if (Exists(in_place)) {
      std::string why = WhyUnopenable(in_place);
      if (!why.empty()) out.push_back({name, std::move(why)});
    } else if (Exists(aside)) {
      out.push_back({name, "set aside by an earlier repair: " + WhyUnopenable(aside)});
    }
  }
  return out;
}

// Moves the files into <dir>/auxstore-damaged/ (a file already there from an
// earlier run stays; the copy in place is then the same file's name reused
// by nothing, and goes).
Status SetAside(const std::string& dir, const std::vector<Unopenable>& files) {
  const std::string aside_dir = dir + "/" + kDamagedDir;
  AUXSTORE_RETURN_IF_ERROR(MakePrivateDir(aside_dir));
  for (const Unopenable& f : files) {
    const std::string from = dir + "/" + f.name, to = aside_dir + "/" + f.name;
    if (!Exists(from)) continue;
    const int rc = Exists(to) ? ::unlink(from.c_str()) : ::rename(from.c_str(), to.c_str());
    if (rc != 0) return Status::IOError("set aside " + from + ": " + std::strerror(errno));
  }
  AUXSTORE_RETURN_IF_ERROR(SyncDir(aside_dir));
  return SyncDir(dir);
}

// Puts files set aside back (a repair that failed before changing the
// store leaves it as it found it).
void PutBack(const std::string& dir, const std::vector<Unopenable>& files) {
  for (const Unopenable& f : files) {
    const std::string from = dir + "/" + kDamagedDir + "/" + f.name, to = dir + "/" + f.name;
    if (!Exists(to)) (void)::rename(from.c_str(), to.c_str());
  }
  (void)SyncDir(dir);
}

// RocksDB's handle on a store with tables missing, closed on destruction.
struct RawDb {
  RocksSetup setup;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<rocksdb::DB> db;
  ~RawDb() {
    if (!db) return;
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
    (void)db->Close();
  }
};

Status OpenRaw(const std::string& dir, RawDb* raw) {
  rocksdb::DBOptions o = raw->setup.db;
  o.paranoid_checks = false;  // a table that cannot be opened is no reason to refuse
  o.create_missing_column_families = false;
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs = raw->setup.cfs;
  for (auto& cf : cfs) cf.options.disable_auto_compactions = true;
  rocksdb::DB* db = nullptr;
  AUXSTORE_RETURN_IF_ERROR(StatusOf(rocksdb::DB::Open(o, dir, cfs, &raw->handles, &db),
                                    "open " + dir + " without its damaged tables"));
  raw->db.reset(db);
  return Status::Ok();
}

struct FamilyRewrite {
  rocksdb::DB* db = nullptr;
  rocksdb::ColumnFamilyHandle* handle = nullptr;
  std::string dir, name;
  std::map<std::string, std::string> damaged;  // file name -> why
  std::vector<std::string>* lines = nullptr;
};

// Writes the newest version of every key the family's tables hold, as a
// lookup would find it, into the family again (newer than all of them).
Status WriteFromTables(FamilyRewrite& f, const std::vector<rocksdb::LiveFileMetaData>& files) {
  std::vector<RewriteTable> tables;
  for (const auto& meta : files) {
    const std::string name = BareName(meta.name);
    const bool damaged = f.damaged.count(name) > 0;
    tables.push_back(
        {meta, f.dir + "/" + (damaged ? std::string(kDamagedDir) + "/" : "") + name, damaged});
  }
  RewriteHooks hooks;
  hooks.on_table = [&](const RewriteTable& t, const TableWalk& walk) -> Status {
    const std::string name = BareName(t.meta.name);
    if (t.damaged) {
      f.lines->push_back("table file " + name + " of " + f.name + " could not be opened (" +
                         f.damaged[name] + "); read without RocksDB: " + walk.Describe() +
                         "; the damaged file is kept at " + t.path);
    } else if (!walk.Complete()) {
      return Status::Corruption("the table file " + name + " of " + f.name +
                                " could not be read whole without RocksDB (" + walk.Describe() +
                                "); the family was not rewritten");
    }
    return Status::Ok();
  };
  RewriteCounts counts;
  AUXSTORE_RETURN_IF_ERROR(store_internal::WriteNewestVersions(f.db, f.handle, f.name,
                                                               std::move(tables), hooks, &counts));
  f.lines->push_back("rewrote " + f.name + " from its " + std::to_string(files.size()) +
                     (files.size() == 1 ? " table file: " : " table files: ") +
                     std::to_string(counts.written) + " entries");
  return Status::Ok();
}

// Every table file the family had goes: bottom level first, level 0 oldest
// first (RocksDB drops only a file nothing older lies under).
Status DropFiles(FamilyRewrite& f, std::vector<rocksdb::LiveFileMetaData> files) {
  std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) {
    if (a.level != b.level) return a.level > b.level;
    return a.largest_seqno < b.largest_seqno;
  });
  for (const auto& meta : files) {
    AUXSTORE_RETURN_IF_ERROR(StatusOf(f.db->DeleteFile(meta.name), "drop " + meta.name));
  }
  return Status::Ok();
}

std::vector<rocksdb::LiveFileMetaData> FilesOf(rocksdb::DB* db, const std::string& family) {
  std::vector<rocksdb::LiveFileMetaData> live, out;
  db->GetLiveFilesMetaData(&live);
  for (auto& m : live) {
    if (m.column_family_name == family) out.push_back(std::move(m));
  }
  return out;
}

Status RewriteFamily(FamilyRewrite& f) {
  // The memtable (a WAL replayed) is newer than every table: flushed first,
  // it is one more table to read.
  rocksdb::FlushOptions fo;
  fo.wait = true;
  AUXSTORE_RETURN_IF_ERROR(StatusOf(f.db->Flush(fo, f.handle), "flush " + f.name));
  const std::vector<rocksdb::LiveFileMetaData> before = FilesOf(f.db, f.name);
  AUXSTORE_RETURN_IF_ERROR(WriteFromTables(f, before));
  AUXSTORE_RETURN_IF_ERROR(StatusOf(f.db->FlushWAL(true), "sync the rewrite of " + f.name));
  AUXSTORE_RETURN_IF_ERROR(StatusOf(f.db->Flush(fo, f.handle), "flush the rewrite of " + f.name));
  AUXSTORE_RETURN_IF_ERROR(DropFiles(f, before));
  for (const auto& m : FilesOf(f.db, f.name)) {
    for (const auto& old : before) {
      if (old.name == m.name) {
        return Status::Internal("the table file " + m.name + " of " + f.name +
                                " is still live after the family was rewritten");
      }
    }
  }
  return Status::Ok();
}

Result<std::vector<std::string>> RewriteAround(const std::string& dir,
                                               const std::vector<Unopenable>& files,
                                               const LogSink& log_sink, LogLevel log_level) {
  RawDb raw;
  // RocksDB logs, as an error, each table it cannot open: here that is the
  // point, and the report says it once per file.
  LogSink quiet = [log_sink](const LogRecord& r) {
    if (r.message.find("Unable to load table properties") == std::string_view::npos) {
      Deliver(log_sink, r);
    }
  };
  raw.setup = MakeRocksSetup(nullptr, quiet, log_level);
  AUXSTORE_RETURN_IF_ERROR(OpenRaw(dir, &raw));
  std::vector<rocksdb::LiveFileMetaData> live;
  raw.db->GetLiveFilesMetaData(&live);
  std::map<std::string, std::map<std::string, std::string>> damaged_of;  // family -> file -> why
  for (const Unopenable& u : files) {
    for (const auto& m : live) {
      if (BareName(m.name) == u.name) damaged_of[m.column_family_name][u.name] = u.why;
    }
  }
  std::vector<std::string> lines;
  for (auto& [family, damaged] : damaged_of) {
    FamilyRewrite f;
    f.db = raw.db.get();
    f.dir = dir;
    f.name = family;
    f.damaged = damaged;
    f.lines = &lines;
    for (size_t i = 0; i < raw.setup.cfs.size(); ++i) {
      if (raw.setup.cfs[i].name == family) f.handle = raw.handles[i];
    }
    if (f.handle == nullptr) {
      return Status::Corruption("table files of " + family + ", not a family of the store");
    }
    AUXSTORE_RETURN_IF_ERROR(RewriteFamily(f));
  }
  return lines;
}

}  // namespace

Result<std::vector<std::string>> RepairUnopenableTables(const std::string& dir,
                                                        const LogSink& log_sink,
                                                        LogLevel log_level) {
  AUXSTORE_ASSIGN_OR_RETURN(DirCheck check, InspectStoreDir(dir));
  if (check.state != DirState::kStore) return std::vector<std::string>();
  AUXSTORE_ASSIGN_OR_RETURN(WriterLock lock, WriterLock::Acquire(dir));
  const std::vector<Unopenable> files = FindUnopenable(dir);
  if (files.empty()) return std::vector<std::string>();
  Status aside = SetAside(dir, files);
  if (!aside.ok()) {
    PutBack(dir, files);
    return aside;
  }
  const std::string current = ReadCurrent(dir);
  auto lines = RewriteAround(dir, files, log_sink, log_level);
  // Nothing changed yet when the MANIFEST is the one found (the open
  // failed): the files go back where they were.
  if (!lines.ok() && ReadCurrent(dir) == current) PutBack(dir, files);
  return lines;
}

}  // namespace auxstore::store_internal
