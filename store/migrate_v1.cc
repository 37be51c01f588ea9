// `auxstore migrate`: a store of format version 1 (records keyed by prefix,
// manifests of whole-blob chunks; docs/format.md before paged storage)
// rebuilt as this build's version beside it, then swapped in atomically.
#include <fcntl.h>
#include <stdio.h>  // renameat2, RENAME_EXCHANGE
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <optional>

#include "auxstore/blob_hash.h"
#include "auxstore/maintenance.h"
#include "auxstore/store.h"
#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/namespace_spec.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"
#include "store/rocks/rocks_options.h"
#include "store/store_dir.h"

namespace auxstore {
namespace {

namespace fs = std::filesystem;
using namespace store_internal;

Status Errno(const std::string& what) {
  return Status::IOError(what + ": " + std::strerror(errno));
}

Status FsyncDir(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Errno("open " + dir);
  const int rc = ::fsync(fd);
  ::close(fd);
  return rc == 0 ? Status::Ok() : Errno("fsync " + dir);
}

// A version-1 manifest (its layout, frozen): u32 version 1 | u64 tokens |
// i64 created | u32 chunk_bytes | u8 has_digest [16 digest] | u32 n | n x
// (u32 layer | u8 kind | u64 bytes | u32 chunks | u64 xxh3).
struct V1Layer {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  uint64_t bytes = 0;
  uint32_t chunks = 0;
  uint64_t xxh3 = 0;
};
struct V1Manifest {
  uint64_t token_count = 0;
  int64_t created_unix_ms = 0;
  uint32_t chunk_bytes = 0;
  std::optional<TokenDigest> token_digest;
  std::vector<V1Layer> layers;
};

Result<V1Manifest> DecodeV1Manifest(ByteSpan p) {
  using internal::GetLE32;
  using internal::GetLE64;
  auto bad = [] { return Status::Corruption("version-1 manifest is malformed"); };
  size_t at = 0;
  auto need = [&](size_t n) { return p.size() - at >= n; };
  V1Manifest m;
  if (!need(4 + 8 + 8 + 4 + 1) || GetLE32(p.data()) != 1) return bad();
  m.token_count = GetLE64(p.data() + 4);
  m.created_unix_ms = static_cast<int64_t>(GetLE64(p.data() + 12));
  m.chunk_bytes = GetLE32(p.data() + 20);
  const uint8_t has_digest = p[24];
  at = 25;
  if (m.chunk_bytes == 0 || has_digest > 1) return bad();
  if (has_digest) {
    if (!need(16)) return bad();
    TokenDigest d;
    std::memcpy(d.bytes.data(), p.data() + at, 16);
    m.token_digest = d;
    at += 16;
  }
  if (!need(4)) return bad();
  const uint32_t n = GetLE32(p.data() + at);
  at += 4;
  if ((p.size() - at) != uint64_t{n} * 25) return bad();
  for (uint32_t i = 0; i < n; ++i, at += 25) {
    V1Layer l;
    l.layer = GetLE32(p.data() + at);
    if (!IsKnownKind(p[at + 4])) return bad();
    l.kind = static_cast<Kind>(p[at + 4]);
    l.bytes = GetLE64(p.data() + at + 5);
    l.chunks = GetLE32(p.data() + at + 13);
    l.xxh3 = GetLE64(p.data() + at + 17);
    const uint64_t want = l.bytes == 0 ? 1 : (l.bytes - 1) / m.chunk_bytes + 1;
    if (l.chunks != want) return bad();
    m.layers.push_back(l);
  }
  return m;
}

std::string V1RecordKey(const std::string& snapshot_key, uint32_t layer, uint32_t chunk) {
  std::string k = snapshot_key;
  uint8_t b[4];
  internal::PutBE32(b, layer);
  k.append(reinterpret_cast<const char*>(b), 4);
  internal::PutBE32(b, chunk);
  k.append(reinterpret_cast<const char*>(b), 4);
  return k;
}

// The old store, opened read-only with the families it has.
struct OldStore {
  RocksSetup setup = MakeRocksSetup();
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  std::unique_ptr<rocksdb::DB> db;
  std::map<std::string, rocksdb::ColumnFamilyHandle*> cf;
  ~OldStore() {
    for (auto* h : handles) (void)db->DestroyColumnFamilyHandle(h);
  }
};

Result<std::unique_ptr<OldStore>> OpenOld(const std::string& path) {
  auto o = std::make_unique<OldStore>();
  std::vector<std::string> families;
  rocksdb::Status ls = rocksdb::DB::ListColumnFamilies(o->setup.db, path, &families);
  if (!ls.ok()) return FromRocks(ls, "list the column families of " + path);
  std::vector<rocksdb::ColumnFamilyDescriptor> cfs;
  for (const std::string& name : families) {
    rocksdb::ColumnFamilyOptions opts;
    for (const auto& mine : o->setup.cfs)
      if (mine.name == name) opts = mine.options;
    cfs.emplace_back(name, opts);
  }
  rocksdb::DB* raw = nullptr;
  rocksdb::Status rs = rocksdb::DB::OpenForReadOnly(o->setup.db, path, cfs, &o->handles, &raw);
  if (!rs.ok()) return FromRocks(rs, "open " + path + " read-only");
  o->db.reset(raw);
  for (size_t i = 0; i < families.size(); ++i) o->cf[families[i]] = o->handles[i];
  for (const char* need : {kMetaCf, kNamespacesCf, kManifestsCf, kRecordsCf}) {
    if (!o->cf.count(need)) {
      return Status::Corruption("store " + path + " has no " + std::string(need) + " family");
    }
  }
  return o;
}

Result<uint64_t> FormatVersionOf(OldStore& o, const std::string& path) {
  std::string v;
  rocksdb::Status g = o.db->Get(rocksdb::ReadOptions(), o.cf[kMetaCf], kFormatVersionKey, &v);
  if (!g.ok()) return FromRocks(g, "read the format version of " + path);
  return DecodeMetaU64(kFormatVersionKey, v);
}

// Reads one version-1 snapshot's layers back whole, every record's
// envelope and every blob's XXH3 checked.
Result<std::vector<std::vector<uint8_t>>> ReadV1Snapshot(OldStore& o, const std::string& skey,
                                                         const V1Manifest& m) {
  std::vector<std::vector<uint8_t>> blobs;
  for (const V1Layer& l : m.layers) {
    std::vector<uint8_t> blob;
    blob.reserve(l.bytes);
    for (uint32_t c = 0; c < l.chunks; ++c) {
      const std::string key = V1RecordKey(skey, l.layer, c);
      std::string value;
      rocksdb::ReadOptions ro = HotReadOptions();
      rocksdb::Status g = o.db->Get(ro, o.cf[kRecordsCf], key, &value);
      if (g.IsNotFound()) {
        return Status::Corruption("layer " + std::to_string(l.layer) + " chunk " +
                                  std::to_string(c) + " is missing");
      }
      if (!g.ok()) return FromRocks(g, "read a record");
      auto env = DecodeEnvelope(Bytes(key), Bytes(value));
      if (!env.ok()) return env.error().WithContext("layer " + std::to_string(l.layer));
      if (env->kind != ChunkRecordKind(l.kind)) {
        return Status::Corruption("layer " + std::to_string(l.layer) + " holds another kind");
      }
      blob.insert(blob.end(), env->payload.begin(), env->payload.end());
    }
    if (blob.size() != l.bytes || BlobHasher::Hash(blob) != l.xxh3) {
      return Status::Corruption("layer " + std::to_string(l.layer) +
                                " does not hash to its manifest's XXH3");
    }
    blobs.push_back(std::move(blob));
  }
  return blobs;
}

// Builds the new store at `tmp` from the old one at `path`.
Status Convert(OldStore& old, const std::string& tmp, MigrateReport* r) {
  Options o;
  o.background_maintenance = false;
  AUXSTORE_ASSIGN_OR_RETURN(auto store, Store::Open(o, tmp));
  {
    std::unique_ptr<rocksdb::Iterator> it(
        old.db->NewIterator(rocksdb::ReadOptions(), old.cf[kNamespacesCf]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string key = it->key().ToString();
      auto env = DecodeEnvelope(Bytes(key), Bytes(it->value()));
      if (!env.ok() || env->kind != RecordKind::kNamespace) {
        return Status::Corruption("a namespace record of the old store is damaged");
      }
      AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, internal::DecodeNamespaceSpec(env->payload));
      AUXSTORE_ASSIGN_OR_RETURN(NamespaceId id, store->RegisterNamespace(spec));
      NamespaceId want = 0;
      if (!ParseNamespaceKey(key, &want) || want != id) {
        return Status::Corruption("a namespace record of the old store does not match its id");
      }
      ++r->namespaces;
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "read the old namespaces"));
  }
  std::unique_ptr<rocksdb::Iterator> it(
      old.db->NewIterator(rocksdb::ReadOptions(), old.cf[kManifestsCf]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    const std::string skey = it->key().ToString();
    CorruptSnapshot where;
    if (!ParseSnapshotKey(skey, &where.ns, &where.prefix)) continue;
    auto env = DecodeEnvelope(Bytes(skey), Bytes(it->value()));
    Result<V1Manifest> m = env.ok() && env->kind == RecordKind::kManifest
                               ? DecodeV1Manifest(env->payload)
                               : Result<V1Manifest>(Status::Corruption("manifest is damaged"));
    Result<std::vector<std::vector<uint8_t>>> blobs =
        m.ok() ? ReadV1Snapshot(old, skey, *m)
               : Result<std::vector<std::vector<uint8_t>>>(m.error());
    if (!blobs.ok()) {
      where.why = blobs.error().message();
      r->skipped.push_back(std::move(where));
      continue;
    }
    std::vector<LayerBlob> layers;
    for (size_t i = 0; i < m->layers.size(); ++i) {
      layers.push_back({m->layers[i].layer, m->layers[i].kind, (*blobs)[i]});
      r->bytes += (*blobs)[i].size();
    }
    PutOptions put;
    put.token_digest = m->token_digest;
    put.created_unix_ms = m->created_unix_ms;
    AUXSTORE_RETURN_IF_ERROR(store->PutSnapshot(where.ns, where.prefix, m->token_count, layers, put)
                                 .WithContext("carry over prefix " + where.prefix.ToHex()));
    ++r->snapshots;
  }
  AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "read the old manifests"));
  AUXSTORE_RETURN_IF_ERROR(store->Flush());
  store.reset();  // closed: every file synced
  return FsyncDir(tmp);
}

}  // namespace

Result<MigrateReport> MigrateStoreAt(const std::string& path_in) {
  std::string path = path_in;
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  const std::string tmp = path + ".migrate-tmp", backup = path + ".v1";
  const std::string parent = fs::path(path).parent_path().empty()
                                 ? std::string(".")
                                 : fs::path(path).parent_path().string();
  MigrateReport r;
  r.to_version = kStoreFormatVersion;
  r.backup = backup;
  std::error_code ec;
  uint64_t version = 0;
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto old, OpenOld(path));
    AUXSTORE_ASSIGN_OR_RETURN(version, FormatVersionOf(*old, path));
  }
  r.from_version = version;
  if (version == kStoreFormatVersion) {
    r.already_current = true;
    // A crash after the swap left the old store at tmp: keep it as the backup.
    if (fs::exists(tmp, ec)) {
      if (fs::exists(backup, ec)) {
        return Status::InvalidArgument(path + " is migrated, but both " + tmp + " and " + backup +
                                       " exist: remove the one you do not need");
      }
      if (::rename(tmp.c_str(), backup.c_str()) != 0) return Errno("rename " + tmp);
      AUXSTORE_RETURN_IF_ERROR(FsyncDir(parent));
    }
    return r;
  }
  if (version != 1) {
    return Status::NotSupported("store " + path + " has format version " + std::to_string(version) +
                                "; migrate converts version 1 to " +
                                std::to_string(kStoreFormatVersion));
  }
  if (fs::exists(backup, ec)) {
    return Status::InvalidArgument(backup +
                                   " already exists: migrate keeps the old store there "
                                   "and overwrites nothing; move it away first");
  }
  // The old store's writers: this build's (the flock) and the previous
  // release's (RocksDB's fcntl LOCK; this process holds it, on one
  // descriptor, until the swap). The old store is kept byte for byte at
  // PATH.v1, so no AUXSTORE-LOCK is created in it: without one, no writer
  // of this build holds it (and one that starts refuses version 1).
  AUXSTORE_ASSIGN_OR_RETURN(WriterLock writer, WriterLock::AcquireIfPresent(path));
  const std::string rocks_lock = path + "/LOCK";
  const int lock_fd = ::open(rocks_lock.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  struct CloseFd {
    int fd;
    ~CloseFd() {
      if (fd >= 0) ::close(fd);
    }
  } close_lock{lock_fd};
  if (lock_fd >= 0) {
    struct flock fl {};
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (::fcntl(lock_fd, F_SETLK, &fl) != 0) {
      return Status::Busy("store " + path + " is open by another process (RocksDB's LOCK is held)");
    }
  }
  // Beside a version-1 PATH, tmp can only be a new store a crash cut short.
  fs::remove_all(tmp, ec);
  if (ec) return Status::IOError("remove " + tmp + ": " + ec.message());
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto old, OpenOld(path));
    AUXSTORE_RETURN_IF_ERROR(Convert(*old, tmp, &r));
  }
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0) {
    return Errno("swap " + tmp + " and " + path);
  }
  AUXSTORE_RETURN_IF_ERROR(FsyncDir(parent));
  if (::rename(tmp.c_str(), backup.c_str()) != 0) return Errno("rename " + tmp);
  AUXSTORE_RETURN_IF_ERROR(FsyncDir(parent));
  return r;
}

}  // namespace auxstore
