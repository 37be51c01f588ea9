// Namespaces, commits and the record files of a put.
#include <rocksdb/sst_file_writer.h>
#include <rocksdb/write_batch.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "auxstore/blob_hash.h"
#include "format/envelope.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"
#include "store/run_beside.h"
#include "store/watermark.h"

namespace auxstore::store_internal {
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
  const std::string value = EncodeEnvelope(Bytes(key), RecordKind::kNamespace,
                                           Bytes(internal::EncodeNamespaceSpec(spec)));
  rocksdb::WriteOptions wo;
  wo.sync = true;
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->Put(wo, cf_[kNamespaces], key, value), "register namespace " + NamespaceHex(ns)));
  std::unique_lock lock(ns_mu_);
  namespaces_[ns] = spec;
  return ns;
}

namespace {

// Where to cut a put's streams (sorted, so their keys are too) into two SST
// files written in parallel: one writer is bound by one core (building
// blocks, hashing, the kernel copy; perf-notes: 0.93 -> 1.08 x raw write
// with two). Cuts only at a layer boundary. Returns streams.size() when one
// file is better: a single layer, or a half under 64 MiB. Smaller halves
// wrote faster too, but read slower: a 64 MiB snapshot in two files
// restored cold at 1.76 GB/s against 3.10 in one (auxstore_bench, 4 MiB x
// 16 layers; the raw read of the same files fell alike), so only puts big
// enough for the split to be free on the read side get it.
template <typename Stream>
size_t ParallelSstCut(std::span<const Stream> streams) {
  constexpr uint64_t kMinHalf = 64u << 20;
  uint64_t total = 0;
  for (const Stream& s : streams) total += s.bytes.size();
  uint64_t before = 0;
  for (size_t i = 0; i < streams.size(); ++i) {
    const bool layer_starts = i == 0 || streams[i].layer != streams[i - 1].layer;
    if (layer_starts && before >= total / 2) {
      return before >= kMinHalf && total - before >= kMinHalf ? i : streams.size();
    }
    before += streams[i].bytes.size();
  }
  return streams.size();
}

}  // namespace

Status DbStore::WriteSst(const std::string& file, NamespaceId ns, PutId put,
                         std::span<const OwnStream> streams, rocksdb::ExternalSstFileInfo* info) {
  rocksdb::SstFileWriter writer(rocksdb::EnvOptions(), RecordsSstWriterOptions(setup_),
                                cf_[kRecords]);
  AUXSTORE_RETURN_IF_ERROR(FromRocks(writer.Open(file), "create " + file));
  AUXSTORE_RETURN_IF_ERROR(
      ForEachRecord(ns, put, streams, [&](const std::string& k, const std::string& v) {
        return FromRocks(writer.Put(k, v), "write " + file);
      }));
  return FromRocks(writer.Finish(info), "finish " + file);
}

Status DbStore::WriteIngested(NamespaceId ns, PutId put, const std::string& skey,
                              std::span<const OwnStream> streams) {
  // One SST per put (two, written in parallel, for big ones), written once
  // and moved into the tree: no WAL copy, no memtable, no compaction
  // rewrite (write amplification 1.0).
  struct RemoveOnExit {
    std::vector<std::string> files;
    ~RemoveOnExit() {
      for (const std::string& f : files) ::unlink(f.c_str());  // no-op once moved into the DB
    }
  } cleanup;
  const size_t cut = ParallelSstCut(streams);
  const size_t parts = cut < streams.size() ? 2 : 1;
  for (size_t i = 0; i < parts; ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "/%d-%" PRIu64 ".sst", static_cast<int>(::getpid()),
                  ingest_counter_.fetch_add(1));
    cleanup.files.push_back(path_ + "/" + kIngestDir + name);
  }
  std::vector<rocksdb::ExternalSstFileInfo> infos(parts);
  if (parts == 1) {
    AUXSTORE_RETURN_IF_ERROR(WriteSst(cleanup.files[0], ns, put, streams, &infos[0]));
  } else {
    // The second half on the work pool, the first on this thread; this
    // thread writes both when no pool thread is free (never a deadlock).
    auto [first, second] = RunBeside(
        work_pool_.get_executor(),
        [&] { return WriteSst(cleanup.files[0], ns, put, streams.first(cut), &infos[0]); },
        [&] { return WriteSst(cleanup.files[1], ns, put, streams.subspan(cut), &infos[1]); });
    AUXSTORE_RETURN_IF_ERROR(first);
    AUXSTORE_RETURN_IF_ERROR(second);
  }

  // The intent makes a crash between ingest and commit leave a findable
  // orphan instead of one only a full scan finds.
  const std::string intent = kIntentPrefix + PutKey(ns, put);
  rocksdb::WriteOptions wo;
  wo.sync = options_.durability == Durability::kSync;
  AUXSTORE_RETURN_IF_ERROR(
      Guard(db_->Put(wo, cf_[kMeta], intent, EncodeMeta(intent, skey)), "record a write intent"));

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
  return Guard(db_->IngestExternalFiles({arg}), "ingest the records of a put");
}

Status DbStore::CommitManifest(rocksdb::WriteBatch* batch, NamespaceId ns, const Prefix& prefix,
                               const Manifest& manifest, bool shares_pages) {
  const std::string skey = SnapshotKey(ns, prefix);
  const std::string value =
      EncodeEnvelope(Bytes(skey), RecordKind::kManifest, Bytes(EncodeManifest(manifest)));
  AUXSTORE_RETURN_IF_ERROR(FromRocks(batch->Put(cf_[kManifests], skey, value), "batch"));
  const bool sync = options_.durability == Durability::kSync;
  std::lock_guard lock(commit_mu_);
  // A kAsync manifest that reads pages of earlier puts must never outlive
  // them: their records and run records may sit in a WAL nobody synced yet,
  // and a power cut may keep a newer WAL's tail while it drops an older
  // one's (files are not ordered), which would leave this manifest visible
  // and torn (found by power_loss_test's partial tails, cycle 134 of 1000).
  // So the commits before it become durable first; its own stays async.
  if (!sync && shares_pages && commit_seq_ > watermark_) {
    AUXSTORE_RETURN_IF_ERROR(SyncCommitsLocked("sync the puts whose pages a put shares"));
  }
  return CommitLocked(batch, sync, "commit the manifest of " + prefix.ToHex());
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
  Status s = WriteWatermark(*setup_.env->GetFileSystem(), path_, seq);
  if (!s.ok()) {
    bool expected = false;
    if (fenced_.compare_exchange_strong(expected, true)) fence_reason_ = s.ToString();
    return s;
  }
  watermark_ = seq;
  return Status::Ok();
}

// Caller holds commit_mu_. Never a sync on a WAL a write already failed on:
// 7.8.3 asserts (live) on it (reliability-notes #2; io_fault_test --cycles
// 200 aborted when a shared-page put synced on a fenced store).
Status DbStore::SyncCommitsLocked(const std::string& what) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  AUXSTORE_RETURN_IF_ERROR(Guard(db_->SyncWAL(), what));
  return AdvanceWatermark(commit_seq_);
}

Status DbStore::Flush() {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  std::lock_guard lock(commit_mu_);
  return SyncCommitsLocked("sync the WAL");
}

}  // namespace auxstore::store_internal
