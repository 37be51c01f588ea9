#include "tools/cli/compact.h"

#include <fcntl.h>
#include <rocksdb/convenience.h>
#include <unistd.h>

#include <algorithm>
#include <set>
#include <thread>

#include "auxstore/store.h"
#include "store/keys.h"
#include "tools/cli/raw_db.h"

namespace auxstore::cli {
namespace {

using namespace store_internal;

struct Totals {
  uint64_t snapshots = 0, bytes = 0;
};

Result<Totals> Count(Store& store) {
  Totals t;
  AUXSTORE_RETURN_IF_ERROR(store.List(std::nullopt, [&](const SnapshotInfo& s) {
    ++t.snapshots;
    t.bytes += s.manifest.payload_bytes();
    return true;
  }));
  return t;
}

bool Dropped(NamespaceId ns, const CompactOptions& o) {
  if (std::find(o.drop_ns.begin(), o.drop_ns.end(), ns) != o.drop_ns.end()) return true;
  return !o.keep_ns.empty() && std::find(o.keep_ns.begin(), o.keep_ns.end(), ns) == o.keep_ns.end();
}

// Through the Store: namespace drops (Erase), then its own TTL/LRU pass.
Status EraseUnwanted(const std::string& path, const CompactOptions& o, CompactReport* r) {
  Options opts;
  opts.create_if_missing = false;
  opts.background_maintenance = false;  // one explicit pass, below
  opts.ttl_seconds = o.ttl_seconds;
  opts.capacity_bytes = o.max_bytes;
  auto opened = Store::Open(opts, path);
  if (!opened.ok()) {
    if (opened.error().code() == StatusCode::kBusy) {
      return Status::Busy("compact needs the store to itself, but " + opened.error().message() +
                          "; stop the writer and try again");
    }
    return opened.error();
  }
  Store& store = **opened;
  AUXSTORE_ASSIGN_OR_RETURN(Totals before, Count(store));
  r->snapshots_before = before.snapshots;
  r->payload_bytes_before = before.bytes;

  std::vector<SnapshotInfo> victims;
  AUXSTORE_RETURN_IF_ERROR(store.List(std::nullopt, [&](const SnapshotInfo& s) {
    if (Dropped(s.ns, o)) victims.push_back(s);
    return true;
  }));
  for (const SnapshotInfo& s : victims) {
    Status e = store.Erase(s.ns, s.prefix);
    if (!e.ok() && !e.IsNotFound()) return e;
    ++r->dropped_by_namespace;
  }
  if (o.ttl_seconds || o.max_bytes) {
    // The LRU/TTL pass works from the snapshot index, loaded after open.
    while (!store.Stats().index_ready) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    AUXSTORE_RETURN_IF_ERROR(store.RunMaintenance());
    const StoreStats st = store.Stats();
    r->expired = st.expirations;
    r->evicted = st.evictions;
  }
  return store.Flush();
}

// Record groups with no manifest (left by crashes or quarantines).
Result<uint64_t> RemoveOrphans(RawDb& raw) {
  std::set<std::string> manifests;
  {
    std::unique_ptr<rocksdb::Iterator> it(
        raw.db()->NewIterator(rocksdb::ReadOptions(), raw.cf(kManifests)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) manifests.insert(it->key().ToString());
    AUXSTORE_RETURN_IF_ERROR(FromRocksStatus(it->status(), "list manifests"));
  }
  std::vector<std::pair<std::string, std::string>> ranges;
  {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    std::unique_ptr<rocksdb::Iterator> it(raw.db()->NewIterator(ro, raw.cf(kRecords)));
    for (it->SeekToFirst(); it->Valid();) {
      ParsedRecordKey k;
      if (!ParseRecordKey(it->key().ToStringView(), &k)) {
        it->Next();
        continue;
      }
      const std::string skey = SnapshotKey(k.ns, k.prefix), end = SnapshotRangeEnd(k.ns, k.prefix);
      if (!manifests.count(skey)) ranges.emplace_back(skey, end);
      it->Seek(end);
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocksStatus(it->status(), "scan records for orphans"));
  }
  for (const auto& [begin, end] : ranges) {
    AUXSTORE_RETURN_IF_ERROR(FromRocksStatus(
        raw.db()->DeleteRange(rocksdb::WriteOptions(), raw.cf(kRecords), begin, end),
        "delete orphan records"));
  }
  return ranges.size();
}

Status CompactEverything(RawDb& raw) {
  rocksdb::CompactRangeOptions co;
  co.bottommost_level_compaction = rocksdb::BottommostLevelCompaction::kForce;
  co.exclusive_manual_compaction = true;
  for (auto* cf : raw.families()) {
    AUXSTORE_RETURN_IF_ERROR(FromRocksStatus(raw.db()->CompactRange(co, cf, nullptr, nullptr),
                                             "compact " + cf->GetName()));
  }
  // Old WAL files hold erased small snapshots too: sync and let them go.
  return FromRocksStatus(raw.db()->FlushWAL(true), "sync the WAL");
}

// Another process holding RocksDB's LOCK (an fcntl lock) is a live writer.
Status CheckNoOtherWriter(const std::string& path) {
  const std::string lock = path + "/LOCK";
  int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Ok();  // no lock file: no writer (Open reports the rest)
  struct flock fl {};
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  const int rc = ::fcntl(fd, F_GETLK, &fl);
  ::close(fd);
  if (rc == 0 && fl.l_type != F_UNLCK) {
    return Status::Busy("compact needs the store to itself, but " + path +
                        " is open for writing by process " + std::to_string(fl.l_pid) +
                        "; stop the writer and try again");
  }
  return Status::Ok();
}

}  // namespace

Result<CompactReport> CompactStore(const std::string& path, const CompactOptions& options) {
  // Before any open: even a refused RocksDB open rotates the writer's LOG.
  AUXSTORE_RETURN_IF_ERROR(CheckNoOtherWriter(path));
  CompactReport r;
  r.disk_bytes_before = DirectoryBytes(path);
  AUXSTORE_RETURN_IF_ERROR(EraseUnwanted(path, options, &r));
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto raw, RawDb::Open(path, /*read_only=*/false));
    AUXSTORE_ASSIGN_OR_RETURN(r.orphan_snapshots_removed, RemoveOrphans(*raw));
    AUXSTORE_RETURN_IF_ERROR(CompactEverything(*raw));
  }
  {
    Options ro;
    ro.read_only = true;
    AUXSTORE_ASSIGN_OR_RETURN(auto store, Store::Open(ro, path));
    AUXSTORE_ASSIGN_OR_RETURN(Totals after, Count(*store));
    r.snapshots_after = after.snapshots;
    r.payload_bytes_after = after.bytes;
  }
  r.disk_bytes_after = DirectoryBytes(path);
  return r;
}

}  // namespace auxstore::cli
