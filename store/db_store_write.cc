#include <rocksdb/convenience.h>
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <thread>
#include <vector>

#include "auxstore/blob_hash.h"
#include "format/envelope.h"
#include "format/manifest.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"
#include "format/namespace_spec.h"
#include "store/watermark.h"

namespace auxstore::store_internal {
namespace {

// Builds each record value (envelope header + chunk) in one reused buffer.
class RecordBuilder {
 public:
  template <typename Emit>
  static Status ForEachRecord(NamespaceId ns, const Prefix& prefix,
                              std::span<const LayerBlob> sorted_layers, uint32_t chunk_bytes,
                              Emit&& emit) {
    std::string value;
    for (const LayerBlob& l : sorted_layers) {
      const uint32_t chunks = ChunkCount(l.bytes.size(), chunk_bytes);
      for (uint32_t c = 0; c < chunks; ++c) {
        const std::string key = RecordKey(ns, prefix, l.layer, c);
        ByteSpan payload =
            l.bytes.subspan(uint64_t{c} * chunk_bytes, ChunkSize(l.bytes.size(), chunk_bytes, c));
        value.resize(kEnvelopeHeaderBytes + payload.size());
        auto* p = reinterpret_cast<uint8_t*>(value.data());
        EncodeEnvelopeHeader(Bytes(key), ChunkRecordKind(l.kind), payload, p);
        if (!payload.empty()) std::memcpy(p + kEnvelopeHeaderBytes, payload.data(), payload.size());
        AUXSTORE_RETURN_IF_ERROR(emit(key, value));
      }
    }
    return Status::Ok();
  }
};

}  // namespace

Status DbStore::CheckWritable() const {
  if (options_.read_only) return Status::Unavailable("store " + path_ + " is open read-only");
  if (fenced_.load()) {
    return Status::Unavailable("store " + path_ + " stopped writing after a failed write (" +
                               fence_reason_ + "); close and reopen it");
  }
  return Status::Ok();
}

Status DbStore::Guard(const rocksdb::Status& s, const std::string& what) {
  if (s.ok()) return Status::Ok();
  // Debian's RocksDB 7.8.3 can abort on a second write to a WAL that failed
  // once (reliability-notes #2): after any failed write, write nothing more.
  bool expected = false;
  if (fenced_.compare_exchange_strong(expected, true)) {
    fence_reason_ = what + ": " + s.ToString();
    Log(LogLevel::kError, "a write failed; the handle writes nothing more until it is reopened (" +
                              fence_reason_ + ")");
  }
  return FromRocks(s, what);
}

Result<NamespaceId> DbStore::RegisterNamespace(const NamespaceSpec& spec) {
  AUXSTORE_RETURN_IF_ERROR(ValidateNamespaceSpec(spec));
  const NamespaceId ns = NamespaceFingerprint(spec);
  auto existing = NamespaceSpecFor(ns);
  if (existing.ok()) return ns;
  if (!existing.error().IsNotFound()) return existing.error();
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  const std::string key = NamespaceKey(ns);
  const std::string value =
      EncodeEnvelope(Bytes(key), RecordKind::kNamespace, Bytes(internal::EncodeNamespaceSpec(spec)));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->Put(wo, cf_[kNamespaces], key, value), "register namespace " + NamespaceHex(ns)));
  std::unique_lock lock(ns_mu_);
  namespaces_[ns] = spec;
  return ns;
}

Status DbStore::PutSnapshot(NamespaceId ns, const Prefix& prefix, uint64_t token_count,
                            std::span<const LayerBlob> layers, const PutOptions& put) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  auto spec = NamespaceSpecFor(ns);
  if (!spec.ok()) return spec.error();
  if (layers.empty()) return Status::InvalidArgument("a snapshot needs at least one layer");

  // Validate everything before writing anything.
  std::vector<LayerBlob> sorted(layers.begin(), layers.end());
  std::sort(sorted.begin(), sorted.end(),
            [](const LayerBlob& a, const LayerBlob& b) { return a.layer < b.layer; });
  for (size_t i = 0; i < sorted.size(); ++i) {
    const LayerBlob& l = sorted[i];
    if (i > 0 && l.layer == sorted[i - 1].layer) {
      return Status::InvalidArgument("layer " + std::to_string(l.layer) +
                                     " appears twice in one snapshot");
    }
    if (!IsKnownKind(static_cast<uint8_t>(l.kind))) {
      return Status::InvalidArgument("layer " + std::to_string(l.layer) + " has unknown kind " +
                                     std::to_string(static_cast<unsigned>(l.kind)));
    }
    if (ChunkCount(l.bytes.size(), options_.chunk_bytes) == UINT32_MAX) {
      return Status::InvalidArgument("layer " + std::to_string(l.layer) + " is too large");
    }
    const ByteSpan head = l.bytes.first(std::min(l.bytes.size(), BlobHeadBytes(l.kind)));
    Status s = CheckLayerBlob(l.layer, l.kind, head, l.bytes.size(), *spec);
    if (!s.ok()) return s.WithContext("layer " + std::to_string(l.layer));
  }

  const std::string skey = SnapshotKey(ns, prefix);
  KeyLock key_lock(this, skey);
  {
    std::string existing;
    rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &existing);
    if (g.ok()) {
      ++duplicate_puts_;
      return Status::Ok();
    }
    if (!g.IsNotFound()) return FromRocks(g, "look up prefix " + prefix.ToHex());
  }
  // Records left under this prefix by a put that crashed before its commit
  // (or an erase that crashed after removing the manifest) go first, so they
  // can never mix with this snapshot's (issue 12 finding 8).
  AUXSTORE_ASSIGN_OR_RETURN(bool leftovers, HasRecords(ns, prefix));
  if (leftovers) AUXSTORE_RETURN_IF_ERROR(DeleteRecords(ns, prefix));

  Manifest m;
  m.token_count = token_count;
  m.created_unix_ms = NowUnixMs();
  m.chunk_bytes = options_.chunk_bytes;
  m.token_digest = put.token_digest;
  for (const LayerBlob& l : sorted) {
    m.layers.push_back({l.layer, l.kind, l.bytes.size(),
                        ChunkCount(l.bytes.size(), options_.chunk_bytes),
                        BlobHasher::Hash(l.bytes)});
  }
  Status s = m.payload_bytes() >= options_.ingest_threshold_bytes
                 ? WriteIngested(ns, prefix, sorted, m)
                 : WriteBatched(ns, prefix, sorted, m);
  if (!s.ok()) return s;
  ++puts_;
  bytes_written_ += m.payload_bytes();
  const int64_t now = NowUnixMs();
  index_.Added(skey, {m.payload_bytes(), m.created_unix_ms, now});
  if (options_.capacity_bytes && index_.bytes() > options_.capacity_bytes) {
    {
      std::lock_guard lock(maint_mu_);
      poke_ = true;
    }
    maint_cv_.notify_all();
  }
  return Status::Ok();
}

Status DbStore::WriteBatched(NamespaceId ns, const Prefix& prefix,
                             std::span<const LayerBlob> layers, const Manifest& manifest) {
  // Records and manifest in one WriteBatch: atomic, never orphaned.
  rocksdb::WriteBatch batch;
  AUXSTORE_RETURN_IF_ERROR(RecordBuilder::ForEachRecord(
      ns, prefix, layers, options_.chunk_bytes, [&](const std::string& k, const std::string& v) {
        return FromRocks(batch.Put(cf_[kRecords], k, v), "batch a record");
      }));
  return CommitManifest(&batch, ns, prefix, manifest);
}

// Where to cut a snapshot's layers (sorted, so their keys are too) into two
// SST files written in parallel: one writer is bound by one core (building
// blocks, hashing, the kernel copy; perf-notes: 0.93 -> 1.08 x raw write
// with two). Returns layers.size() when one file is better: a single layer,
// or a half under 64 MiB. Smaller halves wrote faster too, but read slower:
// a 64 MiB snapshot in two files restored cold at 1.76 GB/s against 3.10 in
// one (auxstore_bench, 4 MiB x 16 layers; the raw read of the same files
// fell alike), so only snapshots big enough for the split to be free on the
// read side get it.
size_t ParallelSstCut(std::span<const LayerBlob> layers) {
  constexpr uint64_t kMinHalf = 64u << 20;
  uint64_t total = 0;
  for (const LayerBlob& l : layers) total += l.bytes.size();
  uint64_t before = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (before >= total / 2) {
      return before >= kMinHalf && total - before >= kMinHalf ? i : layers.size();
    }
    before += layers[i].bytes.size();
  }
  return layers.size();
}

Status DbStore::WriteSst(const std::string& file, NamespaceId ns, const Prefix& prefix,
                         std::span<const LayerBlob> layers, rocksdb::ExternalSstFileInfo* info) {
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), RecordsSstWriterOptions(setup_),
                                cf_[kRecords]);
  AUXSTORE_RETURN_IF_ERROR(FromRocks(writer.Open(file), "create " + file));
  AUXSTORE_RETURN_IF_ERROR(RecordBuilder::ForEachRecord(
      ns, prefix, layers, options_.chunk_bytes, [&](const std::string& k, const std::string& v) {
        return FromRocks(writer.Put(k, v), "write " + file);
      }));
  return FromRocks(writer.Finish(info), "finish " + file);
}

Status DbStore::WriteIngested(NamespaceId ns, const Prefix& prefix,
                              std::span<const LayerBlob> layers, const Manifest& manifest) {
  // One SST per snapshot (two, written in parallel, for big ones), written
  // once and moved into the tree: no WAL copy, no memtable, no compaction
  // rewrite (write amplification 1.0).
  struct RemoveOnExit {
    std::vector<std::string> files;
    ~RemoveOnExit() {
      for (const std::string& f : files) ::unlink(f.c_str());  // no-op once moved into the DB
    }
  } cleanup;
  const size_t cut = ParallelSstCut(layers);
  const size_t parts = cut < layers.size() ? 2 : 1;
  for (size_t i = 0; i < parts; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/%d-%" PRIu64 ".sst", static_cast<int>(::getpid()),
                  ingest_counter_.fetch_add(1));
    cleanup.files.push_back(path_ + "/" + kIngestDir + name);
  }
  std::vector<rocksdb::ExternalSstFileInfo> infos(parts);
  if (parts == 1) {
    AUXSTORE_RETURN_IF_ERROR(WriteSst(cleanup.files[0], ns, prefix, layers, &infos[0]));
  } else {
    Status second;
    std::thread helper(
        [&] { second = WriteSst(cleanup.files[1], ns, prefix, layers.subspan(cut), &infos[1]); });
    Status first = WriteSst(cleanup.files[0], ns, prefix, layers.first(cut), &infos[0]);
    helper.join();
    AUXSTORE_RETURN_IF_ERROR(first);
    AUXSTORE_RETURN_IF_ERROR(second);
  }

  // The intent makes a crash between ingest and manifest leave a findable
  // orphan instead of one only a full scan finds.
  const std::string skey = SnapshotKey(ns, prefix);
  rocksdb::WriteOptions wo;
  wo.sync = options_.durability == Durability::kSync;
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->Put(wo, cf_[kMeta], kIntentPrefix + skey, EncodeMeta(kIntentPrefix + skey, "")),
            "record a write intent"));

  rocksdb::IngestExternalFileArg arg;
  arg.column_family = cf_[kRecords];
  arg.external_files = cleanup.files;  // key ranges disjoint: both land in the bottom level
  arg.options.move_files = true;
  arg.options.write_global_seqno = false;
  arg.options.snapshot_consistency = false;  // the store holds no RocksDB snapshots
  // SstFileWriter computed the XXH3 file checksum while writing: trust it
  // instead of reading the file back.
  arg.options.verify_file_checksum = false;
  for (const rocksdb::ExternalSstFileInfo& info : infos) {
    if (info.file_checksum.empty()) break;  // all or none (one factory)
    arg.files_checksums.push_back(info.file_checksum);
    arg.files_checksum_func_names.push_back(info.file_checksum_func_name);
  }
  if (arg.files_checksums.size() != infos.size()) {
    arg.files_checksums.clear();
    arg.files_checksum_func_names.clear();
  }
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->IngestExternalFiles({arg}), "ingest the records of " + prefix.ToHex()));

  rocksdb::WriteBatch batch;
  AUXSTORE_RETURN_IF_ERROR(FromRocks(batch.Delete(cf_[kMeta], kIntentPrefix + skey), "batch"));
  return CommitManifest(&batch, ns, prefix, manifest);
}

Status DbStore::CommitManifest(rocksdb::WriteBatch* batch, NamespaceId ns, const Prefix& prefix,
                               const Manifest& manifest) {
  const std::string skey = SnapshotKey(ns, prefix);
  const std::string value =
      EncodeEnvelope(Bytes(skey), RecordKind::kManifest, Bytes(EncodeManifest(manifest)));
  AUXSTORE_RETURN_IF_ERROR(FromRocks(batch->Put(cf_[kManifests], skey, value), "batch"));
  return Commit(batch, options_.durability == Durability::kSync,
                "commit the manifest of " + prefix.ToHex());
}

// Every change to which snapshots are visible (a put, an erase, an eviction,
// a quarantine) is a commit: it takes the next commit sequence in the same
// batch, so a WAL or MANIFEST that loses it is caught at open by the
// watermark, whichever kind of change was lost.
Status DbStore::Commit(rocksdb::WriteBatch* batch, bool sync, const std::string& what) {
  std::lock_guard lock(commit_mu_);
  return CommitLocked(batch, sync, what);
}

Status DbStore::CommitLocked(rocksdb::WriteBatch* batch, bool sync, const std::string& what) {
  const uint64_t seq = commit_seq_ + 1;
  AUXSTORE_RETURN_IF_ERROR(
      FromRocks(batch->Put(cf_[kMeta], kCommitSeqKey, EncodeMetaU64(kCommitSeqKey, seq)), "batch"));
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->Write(wo, batch), what));
  commit_seq_ = seq;
  if (sync) return AdvanceWatermark(seq);
  return Status::Ok();
}

// Caller holds commit_mu_ (or is opening). `seq` must already be durable.
Status DbStore::AdvanceWatermark(uint64_t seq) {
  if (seq <= watermark_ && seq != 0) return Status::Ok();
  Status s = WriteWatermark(path_, seq);
  if (!s.ok()) {
    bool expected = false;
    if (fenced_.compare_exchange_strong(expected, true)) fence_reason_ = s.ToString();
    return s;
  }
  watermark_ = seq;
  return Status::Ok();
}

Status DbStore::Erase(NamespaceId ns, const Prefix& prefix) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  bool absent = false;
  Status s = EraseSnapshot(SnapshotKey(ns, prefix), EraseReason::kUser, &absent);
  return absent ? Status::Ok() : s;
}

Status DbStore::EraseSnapshot(const std::string& skey, EraseReason reason, bool* absent) {
  NamespaceId ns = 0;
  Prefix prefix;
  if (!ParseSnapshotKey(skey, &ns, &prefix)) return Status::Internal("bad snapshot key");
  KeyLock key_lock(this, skey);
  std::string existing;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &existing);
  if (g.IsNotFound()) {
    index_.Removed(skey);
    if (absent) *absent = true;
    return Status::NotFound("no snapshot for prefix " + prefix.ToHex() + " in namespace " +
                            NamespaceHex(ns));
  }
  if (!g.ok()) return FromRocks(g, "look up prefix " + prefix.ToHex());
  if (reason != EraseReason::kUser && index_.Leased(skey, NowUnixMs())) {
    return Status::Busy("snapshot of prefix " + prefix.ToHex() + " is leased");
  }
  // The manifest goes first, durably: from then on the records are orphans
  // that no reader can reach, whatever happens next.
  rocksdb::WriteBatch batch;
  (void)batch.Delete(cf_[kManifests], skey);
  (void)batch.Delete(cf_[kRecency], skey);
  AUXSTORE_RETURN_IF_ERROR(
      Commit(&batch, /*sync=*/true, "erase the manifest of " + prefix.ToHex()));
  index_.Removed(skey);
  if (reason == EraseReason::kEviction) ++evictions_;
  if (reason == EraseReason::kExpiry) ++expirations_;
  return DeleteRecords(ns, prefix);
}

Result<bool> DbStore::HasRecords(NamespaceId ns, const Prefix& prefix) {
  const std::string begin = SnapshotKey(ns, prefix), end = SnapshotRangeEnd(ns, prefix);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions r = HotReadOptions();
  r.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(r, cf_[kRecords]));
  it->Seek(begin);
  if (it->Valid()) return true;
  AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "look for records of " + prefix.ToHex()));
  return false;
}

Status DbStore::DeleteRecords(NamespaceId ns, const Prefix& prefix) {
  const std::string begin = SnapshotKey(ns, prefix), end = SnapshotRangeEnd(ns, prefix);
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->DeleteRange(rocksdb::WriteOptions(), cf_[kRecords], begin, end),
            "delete the records of " + prefix.ToHex()));
  // An ingested snapshot is a file of its own: drop it now, no compaction I/O.
  rocksdb::Slice b(begin), e(end);
  return FromRocks(rocksdb::DeleteFilesInRange(db_.get(), cf_[kRecords], &b, &e),
                   "reclaim the files of " + prefix.ToHex());
}

Status DbStore::Quarantine(NamespaceId ns, const Prefix& prefix, const Status& why) {
  Status s = QuarantineIf(ns, prefix, nullptr, why);
  return s.IsNotFound() ? Status::Ok() : s;
}

Status DbStore::QuarantineIfUnchanged(NamespaceId ns, const Prefix& prefix, const Manifest& seen,
                                      const Status& why) {
  return QuarantineIf(ns, prefix, SameManifest(SnapshotKey(ns, prefix), seen), why);
}

Status DbStore::QuarantineIf(NamespaceId ns, const Prefix& prefix, const ManifestCheck& still_same,
                             const Status& why) {
  if (options_.read_only || fenced_) return why;  // nothing we may change
  const std::string skey = SnapshotKey(ns, prefix);
  KeyLock key_lock(this, skey);
  std::string existing;
  if (!db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &existing).ok() ||
      (still_same && !still_same(existing))) {
    // Erased or replaced since the reader saw it: what it saw was a race
    // with a writer, not damage, and the current snapshot is not touched.
    return Status::NotFound("snapshot of prefix " + prefix.ToHex() +
                            " was erased or replaced while it was being read");
  }
  rocksdb::WriteBatch batch;
  (void)batch.Delete(cf_[kManifests], skey);
  (void)batch.Delete(cf_[kRecency], skey);
  {
    std::lock_guard lock(commit_mu_);
    (void)batch.Put(cf_[kMeta], kQuarantinesKey,
                    EncodeMetaU64(kQuarantinesKey, quarantines_ + 1));
    AUXSTORE_RETURN_IF_ERROR(CommitLocked(
        &batch, /*sync=*/true, "quarantine " + prefix.ToHex() + " (" + why.message() + ")"));
    ++quarantines_;
  }
  index_.Removed(skey);
  Log(LogLevel::kWarn, "quarantined the snapshot of prefix " + prefix.ToHex() + ": " +
                           why.message());
  return why;
}

Status DbStore::Flush() {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard lock(commit_mu_);
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->SyncWAL(), "sync the WAL"));
  return AdvanceWatermark(commit_seq_);
}

}  // namespace auxstore::store_internal
