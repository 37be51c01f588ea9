// Store::Verify and Store::Repair (include/auxstore/maintenance.h).
//
// A snapshot is judged by its own records only, read with the checks every
// read uses (VerifyChunk, CheckLayerDigest) plus the codec check of each
// layer's head against the namespace geometry. RocksDB's file-level checks
// name damaged files; damage they find that no snapshot's records show is a
// store problem, never a reason to remove a snapshot.
#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/metadata.h>

#include <cinttypes>
#include <cstdio>
#include <memory>

#include "auxstore/blob_hash.h"
#include "format/envelope.h"
#include "format/manifest.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "format/namespace_spec.h"

namespace auxstore::store_internal {
namespace {

std::string Where(NamespaceId ns, const Prefix& prefix) {
  return "prefix " + prefix.ToHex() + " in namespace " + NamespaceHex(ns);
}

// A live file RocksDB's own checks found damaged, and the key range it holds.
struct DamagedFile {
  std::string file;
  int cf = kDefault;
  std::string smallest, largest;
  std::string why;
};

Result<std::string> ComputeFileChecksum(rocksdb::Env* env, const std::string& file,
                                        rocksdb::FileChecksumGenFactory* factory,
                                        const std::string& func) {
  rocksdb::FileChecksumGenContext ctx;
  ctx.file_name = file;
  ctx.requested_checksum_func_name = func;
  auto gen = factory->CreateFileChecksumGenerator(ctx);
  if (!gen) return Status::Corruption("file checksum written by unknown generator " + func);
  std::unique_ptr<rocksdb::SequentialFile> in;
  rocksdb::Status s = env->NewSequentialFile(file, &in, rocksdb::EnvOptions());
  if (!s.ok()) return FromRocks(s, "open " + file);
  std::string buf(1 << 20, '\0');
  for (;;) {
    rocksdb::Slice got;
    s = in->Read(buf.size(), &got, buf.data());
    if (!s.ok()) return FromRocks(s, "read " + file);
    if (got.empty()) break;
    gen->Update(got.data(), got.size());
  }
  gen->Finalize();
  return gen->GetChecksum();
}

}  // namespace

class DbStore::Verifier {
 public:
  Verifier(DbStore& store, const VerifyOptions& options, VerifyReport* report)
      : s_(store), o_(options), r_(*report) {}

  Status Run() {
    {
      std::lock_guard lock(s_.commit_mu_);
      r_.commit_seq = s_.commit_seq_;
      r_.watermark = s_.watermark_;
      r_.watermark_lost = s_.lost_commits_at_open_ > 0;
      r_.lost_commits = s_.lost_commits_at_open_;
    }
    if (o_.check_files) CheckFiles();
    CheckNamespaces();
    CheckSnapshots();
    ScanOrphans();
    ReportUnexplainedFiles();
    return Status::Ok();
  }

 private:
  // RocksDB's own checks over every live file; on a failure, each file on
  // its own so every bad one is named (the DB-wide calls stop at the first).
  void CheckFiles() {
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    rocksdb::Status blocks = s_.db_->VerifyChecksum(ro);
    rocksdb::Status files = s_.db_->VerifyFileChecksums(ro);
    if (blocks.ok() && files.ok()) return;
    std::vector<rocksdb::LiveFileMetaData> live;
    s_.db_->GetLiveFilesMetaData(&live);
    auto* factory = s_.setup_.db.file_checksum_gen_factory.get();
    for (const auto& f : live) {
      DamagedFile d;
      d.file = f.db_path + f.name;
      for (int i = 0; i < kCfCount; ++i) {
        if (s_.setup_.cfs[i].name == f.column_family_name) d.cf = i;
      }
      rocksdb::Options opts(s_.setup_.db, s_.setup_.cfs[d.cf].options);
      rocksdb::Status b = rocksdb::VerifySstFileChecksum(opts, rocksdb::EnvOptions(), ro, d.file);
      if (!b.ok()) d.why = "block checksum: " + b.ToString();
      if (d.why.empty() && !f.file_checksum.empty() && factory) {
        auto sum = ComputeFileChecksum(s_.setup_.env.get(), d.file, factory,
                                       f.file_checksum_func_name);
        if (!sum.ok()) {
          d.why = sum.error().ToString();
        } else if (*sum != f.file_checksum) {
          d.why = "file checksum (" + f.file_checksum_func_name + ") mismatch";
        }
      }
      if (d.why.empty()) continue;
      d.smallest = f.smallestkey;
      d.largest = f.largestkey;
      damaged_.push_back(std::move(d));
    }
    if (damaged_.empty()) {
      r_.store_problems.push_back("RocksDB checksum verification failed: " +
                                  (blocks.ok() ? files : blocks).ToString());
    }
  }

  void CheckNamespaces() {
    std::unique_ptr<rocksdb::Iterator> it(
        s_.db_->NewIterator(HotReadOptions(), s_.cf_[kNamespaces]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      NamespaceId ns = 0;
      if (!ParseNamespaceKey(it->key().ToStringView(), &ns)) {
        r_.store_problems.push_back("a namespace record has a malformed key");
        continue;
      }
      auto spec = s_.NamespaceSpecFor(ns);
      if (!spec.ok()) {
        r_.store_problems.push_back("namespace " + NamespaceHex(ns) + ": " +
                                    spec.error().ToString());
        continue;
      }
      ++r_.namespaces;
    }
    if (!it->status().ok()) {
      r_.store_problems.push_back("namespace records unreadable: " + it->status().ToString());
    }
  }

  void CheckSnapshots() {
    VerifyProgress progress;
    progress.bytes_total = s_.index_.ready() ? s_.index_.bytes() : 0;
    progress.snapshots_total = s_.index_.ready() ? s_.index_.snapshots() : 0;
    std::unique_ptr<rocksdb::Iterator> it(
        s_.db_->NewIterator(HotReadOptions(), s_.cf_[kManifests]));
    std::string last;
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      last = it->key().ToString();
      CorruptSnapshot found;
      if (!ParseSnapshotKey(last, &found.ns, &found.prefix)) {
        r_.store_problems.push_back("a manifest record has a malformed key");
        continue;
      }
      ++r_.snapshots_checked;
      const uint64_t bytes_before = r_.bytes_checked;
      auto m = DecodeManifestRecord(last, Bytes(it->value()));
      Status st = m.ok() ? s_.VerifySnapshot(found.ns, found.prefix, *m, &found.layer, &r_)
                         : m.error().WithContext("manifest");
      if (st.ok()) {
        ++r_.snapshots_ok;
      } else {
        found.why = st.ToString();
        r_.corrupt.push_back(std::move(found));
      }
      progress.bytes_done += r_.bytes_checked - bytes_before;
      ++progress.snapshots_done;
      if (o_.progress) o_.progress(progress);
    }
    if (!it->status().ok()) {
      // Manifests in a damaged block cannot even be listed, so they cannot
      // be named; what follows the block is not reached either.
      r_.store_problems.push_back(
          "the manifests are unreadable" +
          (last.empty() ? std::string() : " after the snapshot with key " + ToHex(last)) + ": " +
          it->status().ToString());
    }
  }

  // Record groups no manifest names. Records a manifest does not name
  // inside a live snapshot's range were counted by VerifySnapshot.
  void ScanOrphans() {
    std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(HotReadOptions(), s_.cf_[kRecords]));
    std::string group;
    for (it->SeekToFirst();;) {
      while (it->Valid()) {
        ParsedRecordKey k;
        if (!ParseRecordKey(it->key().ToStringView(), &k)) {
          r_.store_problems.push_back("a record has a malformed key (" +
                                      std::to_string(it->key().size()) + " bytes)");
          it->Next();
          continue;
        }
        const std::string skey = SnapshotKey(k.ns, k.prefix);
        if (skey != group) {
          group = skey;
          std::string manifest;
          rocksdb::Status g =
              s_.db_->Get(HotReadOptions(), s_.cf_[kManifests], skey, &manifest);
          if (!g.IsNotFound()) {  // a live snapshot (or one whose manifest is unreadable)
            it->Seek(SnapshotRangeEnd(k.ns, k.prefix));
            continue;
          }
          ++r_.orphan_snapshots;
        }
        ++r_.orphan_records;
        r_.orphan_bytes += it->value().size();
        it->Next();
      }
      if (it->status().ok()) return;
      // Damage where no snapshot has records: name it, skip past the group.
      r_.store_problems.push_back("records unreadable outside any snapshot's records" +
                                  (group.empty() ? std::string() : " (after key " + ToHex(group) +
                                                                       ")") +
                                  ": " + it->status().ToString());
      if (group.empty() || ++skips_ > 16) return;
      NamespaceId ns = 0;
      Prefix prefix;
      ParseSnapshotKey(group, &ns, &prefix);
      it->Seek(SnapshotRangeEnd(ns, prefix));
    }
  }

  // A damaged file whose damage no corrupt snapshot shows.
  void ReportUnexplainedFiles() {
    for (const DamagedFile& d : damaged_) {
      bool explained = false;
      for (const CorruptSnapshot& c : r_.corrupt) {
        const std::string lo = SnapshotKey(c.ns, c.prefix), hi = SnapshotRangeEnd(c.ns, c.prefix);
        if ((d.cf == kRecords || d.cf == kManifests) && d.smallest < hi && lo <= d.largest) {
          explained = true;
          break;
        }
      }
      if (explained) continue;
      r_.store_problems.push_back("file " + d.file + " (" + s_.setup_.cfs[d.cf].name +
                                  ") is damaged (" + d.why +
                                  "), but no snapshot's own records show it: the damage is in "
                                  "blocks no snapshot reads (an index or filter block, or "
                                  "orphan records)");
    }
  }

  static std::string ToHex(const std::string& bytes) {
    std::string out;
    char b[3];
    for (unsigned char c : bytes) {
      std::snprintf(b, sizeof b, "%02x", c);
      out += b;
    }
    return out;
  }

  DbStore& s_;
  const VerifyOptions& o_;
  VerifyReport& r_;
  std::vector<DamagedFile> damaged_;
  int skips_ = 0;
};

Status DbStore::VerifySnapshot(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                               std::optional<uint32_t>* bad_layer, VerifyReport* report) {
  auto spec = NamespaceSpecFor(ns);
  if (!spec.ok()) {
    return Status::Corruption("namespace " + NamespaceHex(ns) +
                              " of the snapshot is unreadable or not registered: " +
                              spec.error().message());
  }
  const std::string end = SnapshotRangeEnd(ns, prefix);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro = HotReadOptions();
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, cf_[kRecords]));
  it->Seek(SnapshotKey(ns, prefix));
  // One walk over the range reads every record once; after a damaged block
  // stops it, the remaining chunks are read one by one, so damage in a
  // block that holds none of this snapshot's records is not charged to it.
  bool walking = true;
  auto stray = [&] {
    if (report) {
      ++report->orphan_records;
      report->orphan_bytes += it->value().size();
    }
    it->Next();
  };
  for (const LayerEntry& l : m.layers) {
    *bad_layer = l.layer;
    BlobHasher hasher;
    std::string head;
    const size_t head_bytes = BlobHeadBytes(l.kind);
    bool head_checked = false;
    for (uint32_t c = 0; c < l.chunks; ++c) {
      const std::string want = RecordKey(ns, prefix, l.layer, c);
      PinnedRecord pinned;
      ByteSpan value;
      if (walking) {
        while (it->Valid() && it->key().compare(want) < 0) stray();
        if (!it->Valid() && !it->status().ok()) walking = false;
      }
      if (walking) {
        if (!it->Valid() || it->key() != rocksdb::Slice(want)) {
          return Status::Corruption("snapshot is torn: missing layer " + std::to_string(l.layer) +
                                    " chunk " + std::to_string(c) + " of " + Where(ns, prefix));
        }
        value = Bytes(it->value());
      } else {
        AUXSTORE_RETURN_IF_ERROR(PinChunk(ns, prefix, l.layer, c, &pinned));
        value = Bytes(pinned.value);
      }
      ByteSpan payload;
      AUXSTORE_RETURN_IF_ERROR(
          VerifyChunk(ns, prefix, l, m.chunk_bytes, c, value, &hasher, nullptr, &payload));
      if (report) {
        ++report->records_checked;
        report->bytes_checked += payload.size();
      }
      if (!head_checked && head.size() < head_bytes) {
        head.append(reinterpret_cast<const char*>(payload.data()),
                    std::min(payload.size(), head_bytes - head.size()));
      }
      if (!head_checked && (head.size() >= head_bytes || c + 1 == l.chunks)) {
        AUXSTORE_RETURN_IF_ERROR(CheckLayerBlob(l.layer, l.kind, Bytes(head), l.bytes, *spec));
        head_checked = true;
      }
      if (walking) it->Next();
    }
    if (l.chunks == 0) AUXSTORE_RETURN_IF_ERROR(CheckLayerBlob(l.layer, l.kind, {}, l.bytes, *spec));
    AUXSTORE_RETURN_IF_ERROR(CheckLayerDigest(l, hasher.Digest()));
  }
  bad_layer->reset();
  if (walking) {
    while (it->Valid()) stray();
    if (!it->status().ok() && report) {
      report->store_problems.push_back("records unreadable under " + Where(ns, prefix) +
                                       " past the snapshot's own (it reads back intact): " +
                                       it->status().ToString());
    }
  }
  return Status::Ok();
}

Result<VerifyReport> DbStore::Verify(const VerifyOptions& options) {
  VerifyReport report;
  Verifier v(*this, options, &report);
  AUXSTORE_RETURN_IF_ERROR(v.Run());
  return report;
}

Result<RepairReport> DbStore::Repair(const VerifyReport& report) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  RepairReport out;
  out.not_repaired = report.store_problems;
  out.accepted_data_loss = lost_commits_at_open_ > 0;
  for (const CorruptSnapshot& c : report.corrupt) {
    auto m = LoadManifest(c.ns, c.prefix);  // a damaged manifest is quarantined by the load
    Status why;
    if (m.ok()) {
      std::optional<uint32_t> layer;
      why = VerifySnapshot(c.ns, c.prefix, *m, &layer, nullptr);
      if (why.ok()) {
        out.not_repaired.push_back("snapshot " + Where(c.ns, c.prefix) +
                                   " reads back intact now; left alone");
        continue;
      }
      Status q = QuarantineIfUnchanged(c.ns, c.prefix, *m, why);
      if (q.IsNotFound()) continue;  // erased or replaced meanwhile
      if (q != why) return q.WithContext("quarantine " + Where(c.ns, c.prefix));
    } else if (m.error().IsNotFound()) {
      continue;  // gone since the report
    } else if (!m.error().IsCorruption()) {
      return m.error();
    }
    AUXSTORE_RETURN_IF_ERROR(DeleteRecords(c.ns, c.prefix));
    out.removed.push_back(c);
  }
  return out;
}

}  // namespace auxstore::store_internal
