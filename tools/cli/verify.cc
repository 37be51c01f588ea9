#include "tools/cli/verify.h"

#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/file_system.h>
#include <rocksdb/metadata.h>

#include <map>
#include <set>

#include "auxstore/blob_codecs.h"
#include "auxstore/blob_hash.h"
#include "format/envelope.h"
#include "format/manifest.h"
#include "store/bytes.h"
#include "store/keys.h"
#include "store/meta_keys.h"
#include "store/namespace_record.h"
#include "store/watermark.h"
#include "tools/cli/progress.h"
#include "tools/cli/raw_db.h"

namespace auxstore::cli {
namespace {

using namespace store_internal;

std::string Hex16(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

// A scan in progress: the open DB, what it found, and the namespaces.
class Scrub {
 public:
  Scrub(const RawDb& raw, VerifyReport* report) : raw_(raw), r_(*report) {}

  Status Run() {
    CheckMeta();
    AUXSTORE_RETURN_IF_ERROR(CheckFiles());
    LoadNamespaces();
    AUXSTORE_RETURN_IF_ERROR(CheckManifests());
    return ScanOrphans();
  }

 private:
  void CheckMeta() {
    auto* db = raw_.db();
    std::string v;
    rocksdb::Status s = db->Get(rocksdb::ReadOptions(), raw_.cf(kMeta), kFormatVersionKey, &v);
    if (!s.ok()) {
      r_.store_problems.push_back("store format version record unreadable: " + s.ToString());
    } else if (auto ver = DecodeMetaU64(kFormatVersionKey, v); !ver.ok()) {
      r_.store_problems.push_back(ver.error().ToString());
    }
    s = db->Get(rocksdb::ReadOptions(), raw_.cf(kMeta), kCommitSeqKey, &v);
    if (s.ok()) {
      auto seq = DecodeMetaU64(kCommitSeqKey, v);
      if (seq.ok()) {
        r_.commit_seq = *seq;
      } else {
        r_.store_problems.push_back(seq.error().ToString());
      }
    } else if (!s.IsNotFound()) {
      r_.store_problems.push_back("commit sequence unreadable: " + s.ToString());
    }
    auto wm = ReadWatermark(raw_.path());
    if (wm.ok()) {
      r_.watermark = *wm;
      if (*wm > r_.commit_seq) {
        r_.watermark_lost = true;
        r_.store_problems.push_back(
            "lost committed snapshots: the durable watermark is commit " + std::to_string(*wm) +
            " but RocksDB recovered only up to commit " + std::to_string(r_.commit_seq) +
            " (a truncated WAL or MANIFEST?)");
      }
    } else if (wm.error().IsNotFound()) {
      if (r_.commit_seq > 0) {
        r_.watermark_lost = true;
        r_.store_problems.push_back(
            std::string("the durable watermark file ") + kWatermarkFileName + " is missing; " +
            std::to_string(r_.commit_seq) + " commits cannot be vouched for");
      }
    } else {
      r_.watermark_lost = true;
      r_.store_problems.push_back("durable watermark unreadable: " + wm.error().ToString());
    }
  }

  // RocksDB's own checks over every live file; on a failure, each file again
  // on its own so every bad one is named (the DB-wide calls stop at the first).
  Status CheckFiles() {
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    rocksdb::Status blocks = raw_.db()->VerifyChecksum(ro);
    rocksdb::Status files = raw_.db()->VerifyFileChecksums(ro);
    if (blocks.ok() && files.ok()) return Status::Ok();
    std::vector<rocksdb::LiveFileMetaData> live;
    raw_.db()->GetLiveFilesMetaData(&live);
    auto factory = raw_.setup().db.file_checksum_gen_factory;
    for (const auto& f : live) {
      const std::string file = f.db_path + f.name;
      int cf = kDefault;
      for (int i = 0; i < kCfCount; ++i) {
        if (raw_.setup().cfs[i].name == f.column_family_name) cf = i;
      }
      rocksdb::Options opts(raw_.setup().db, raw_.setup().cfs[cf].options);
      std::string problem;
      rocksdb::Status s = rocksdb::VerifySstFileChecksum(opts, rocksdb::EnvOptions(), ro, file);
      if (!s.ok()) problem = "block checksum: " + s.ToString();
      if (problem.empty() && !f.file_checksum.empty()) {
        auto sum = FileChecksum(file, factory.get(), f.file_checksum_func_name);
        if (!sum.ok()) {
          problem = sum.error().ToString();
        } else if (*sum != f.file_checksum) {
          problem = "file checksum (" + f.file_checksum_func_name + ") mismatch";
        }
      }
      if (!problem.empty()) AttributeFile(file, cf, f, problem);
    }
    if (!found_bad_file_) {
      r_.store_problems.push_back("RocksDB checksum verification failed: " +
                                  (blocks.ok() ? files : blocks).ToString());
    }
    return Status::Ok();
  }

  Result<std::string> FileChecksum(const std::string& file, rocksdb::FileChecksumGenFactory* f,
                                   const std::string& func) {
    rocksdb::FileChecksumGenContext ctx;
    ctx.file_name = file;
    ctx.requested_checksum_func_name = func;
    auto gen = f->CreateFileChecksumGenerator(ctx);
    if (!gen) return Status::Corruption("file checksum written by unknown generator " + func);
    std::unique_ptr<rocksdb::SequentialFile> in;
    rocksdb::Status s = raw_.setup().env->NewSequentialFile(file, &in, rocksdb::EnvOptions());
    if (!s.ok()) return FromRocksStatus(s, "open " + file);
    std::string buf(1 << 20, '\0');
    for (;;) {
      rocksdb::Slice got;
      s = in->Read(buf.size(), &got, buf.data());
      if (!s.ok()) return FromRocksStatus(s, "read " + file);
      if (got.empty()) break;
      gen->Update(got.data(), got.size());
    }
    gen->Finalize();
    return gen->GetChecksum();
  }

  // A damaged records file holding one snapshot's records damages that
  // snapshot (an ingested snapshot is one file); anything else is a store
  // problem naming the file.
  void AttributeFile(const std::string& file, int cf, const rocksdb::LiveFileMetaData& f,
                     const std::string& problem) {
    found_bad_file_ = true;
    ParsedRecordKey lo, hi;
    if (cf == kRecords && ParseRecordKey(f.smallestkey, &lo) && ParseRecordKey(f.largestkey, &hi) &&
        lo.ns == hi.ns && lo.prefix == hi.prefix) {
      file_damage_[SnapshotKey(lo.ns, lo.prefix)] = "SST file " + file + ": " + problem;
      return;
    }
    r_.store_problems.push_back("SST file " + file + " (" + f.column_family_name + "): " + problem);
  }

  void LoadNamespaces() {
    std::unique_ptr<rocksdb::Iterator> it(
        raw_.db()->NewIterator(rocksdb::ReadOptions(), raw_.cf(kNamespaces)));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      NamespaceId ns = 0;
      if (!ParseNamespaceKey(it->key().ToStringView(), &ns)) {
        r_.store_problems.push_back("namespace record with a malformed key");
        continue;
      }
      auto env = DecodeEnvelope(Bytes(it->key()), Bytes(it->value()));
      Result<NamespaceSpec> spec =
          env.ok() ? DecodeNamespaceSpec(env->payload) : Result<NamespaceSpec>(env.error());
      if (!spec.ok()) {
        r_.store_problems.push_back("namespace " + Hex16(ns) + ": " + spec.error().ToString());
        continue;
      }
      specs_[ns] = *spec;
    }
    if (!it->status().ok()) {
      r_.store_problems.push_back("namespaces unreadable: " + it->status().ToString());
    }
    r_.namespaces = specs_.size();
  }

  Status CheckManifests() {
    uint64_t total = 0;
    std::vector<std::pair<std::string, std::string>> manifests;
    {
      std::unique_ptr<rocksdb::Iterator> it(
          raw_.db()->NewIterator(rocksdb::ReadOptions(), raw_.cf(kManifests)));
      for (it->SeekToFirst(); it->Valid(); it->Next()) {
        manifests.emplace_back(it->key().ToString(), it->value().ToString());
        auto env = DecodeEnvelope(Bytes(it->key()), Bytes(it->value()));
        if (!env.ok()) continue;
        if (auto m = DecodeManifest(env->payload); m.ok()) total += m->payload_bytes();
      }
      if (!it->status().ok()) {
        r_.store_problems.push_back("manifests unreadable: " + it->status().ToString());
      }
    }
    Progress progress("verify", total);
    for (const auto& [key, value] : manifests) {
      NamespaceId ns = 0;
      Prefix prefix;
      manifest_keys_.insert(key);
      if (!ParseSnapshotKey(key, &ns, &prefix)) {
        r_.store_problems.push_back("manifest with a malformed key");
        continue;
      }
      ++r_.snapshots_checked;
      CorruptSnapshot found{ns, prefix, std::nullopt, ""};
      uint64_t bytes = 0;
      CheckSnapshot(key, value, &found, &bytes);
      if (found.why.empty()) {
        if (auto d = file_damage_.find(key); d != file_damage_.end()) found.why = d->second;
      }
      if (found.why.empty()) {
        ++r_.snapshots_ok;
      } else {
        r_.corrupt.push_back(std::move(found));
      }
      progress.Add(bytes, 1);
    }
    for (const auto& [key, why] : file_damage_) {
      if (!manifest_keys_.count(key)) r_.store_problems.push_back(why + " (orphan records)");
    }
    return Status::Ok();
  }

  // Fills out->why (and layer) with the first problem found.
  void CheckSnapshot(const std::string& key, const std::string& value, CorruptSnapshot* out,
                     uint64_t* bytes_read) {
    auto env = DecodeEnvelope(Bytes(key), Bytes(value));
    if (!env.ok()) {
      out->why = "manifest: " + env.error().ToString();
      return;
    }
    if (env->kind != RecordKind::kManifest) {
      out->why = "manifest record has kind " + std::to_string(static_cast<int>(env->kind));
      return;
    }
    auto m = DecodeManifest(env->payload);
    if (!m.ok()) {
      out->why = "manifest: " + m.error().ToString();
      return;
    }
    auto spec = specs_.find(out->ns);
    if (spec == specs_.end()) {
      out->why = "namespace " + Hex16(out->ns) + " is not registered (or its record is damaged)";
      return;
    }
    // Walk the snapshot's record range against the records the manifest names.
    const std::string end = SnapshotRangeEnd(out->ns, out->prefix);
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions ro;
    ro.verify_checksums = true;
    ro.fill_cache = false;
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(raw_.db()->NewIterator(ro, raw_.cf(kRecords)));
    it->Seek(key);
    for (const LayerEntry& l : m->layers) {
      out->layer = l.layer;
      BlobHasher hasher;
      for (uint32_t c = 0; c < l.chunks; ++c) {
        const std::string want = RecordKey(out->ns, out->prefix, l.layer, c);
        if (!it->Valid()) {
          out->why = it->status().ok() ? "chunk " + std::to_string(c) + " of " +
                                             std::to_string(l.chunks) + " is missing (torn)"
                                       : "records unreadable: " + it->status().ToString();
          return;
        }
        const int cmp = it->key().compare(want);
        if (cmp != 0) {
          ParsedRecordKey got;
          ParseRecordKey(it->key().ToStringView(), &got);
          out->why = cmp > 0 ? "chunk " + std::to_string(c) + " of " + std::to_string(l.chunks) +
                                   " is missing (torn)"
                             : "unexpected record: layer " + std::to_string(got.layer) + " chunk " +
                                   std::to_string(got.chunk) + " is not in the manifest";
          return;
        }
        auto rec = DecodeEnvelope(Bytes(it->key()), Bytes(it->value()));
        ++r_.records_checked;
        if (!rec.ok()) {
          out->why = "chunk " + std::to_string(c) + ": " + rec.error().ToString();
          return;
        }
        if (rec->kind != ChunkRecordKind(l.kind)) {
          out->why = "chunk " + std::to_string(c) + " has record kind " +
                     std::to_string(static_cast<int>(rec->kind)) + ", the manifest says " +
                     std::string(KindName(l.kind));
          return;
        }
        if (rec->payload.size() != ChunkSize(l.bytes, m->chunk_bytes, c)) {
          out->why = "chunk " + std::to_string(c) + " holds " +
                     std::to_string(rec->payload.size()) + " bytes, expected " +
                     std::to_string(ChunkSize(l.bytes, m->chunk_bytes, c));
          return;
        }
        if (c == 0) {
          Status blob = CheckBlob(l.kind, rec->payload, l.bytes, spec->second);
          if (!blob.ok()) {
            out->why = blob.ToString();
            return;
          }
        }
        hasher.Update(rec->payload);
        *bytes_read += rec->payload.size();
        r_.bytes_checked += rec->payload.size();
        it->Next();
      }
      if (hasher.Digest() != l.xxh3) {
        out->why = "whole-blob XXH3 mismatch: manifest " + Hex16(l.xxh3) + ", records " +
                   Hex16(hasher.Digest());
        return;
      }
    }
    out->layer.reset();
    if (it->Valid()) {
      ParsedRecordKey got;
      ParseRecordKey(it->key().ToStringView(), &got);
      out->why = "unexpected record: layer " + std::to_string(got.layer) + " chunk " +
                 std::to_string(got.chunk) + " is not in the manifest";
    } else if (!it->status().ok()) {
      out->why = "records unreadable: " + it->status().ToString();
    }
  }

  // Record groups with no manifest: skip every snapshot's own range.
  Status ScanOrphans() {
    rocksdb::ReadOptions ro;
    ro.fill_cache = false;
    // Block damage was found (and attributed) above; here only keys matter.
    ro.verify_checksums = false;
    std::unique_ptr<rocksdb::Iterator> it(raw_.db()->NewIterator(ro, raw_.cf(kRecords)));
    std::string current;
    for (it->SeekToFirst(); it->Valid();) {
      ParsedRecordKey k;
      if (!ParseRecordKey(it->key().ToStringView(), &k)) {
        r_.store_problems.push_back("record with a malformed key (" +
                                    std::to_string(it->key().size()) + " bytes)");
        it->Next();
        continue;
      }
      const std::string skey = SnapshotKey(k.ns, k.prefix);
      if (manifest_keys_.count(skey)) {
        it->Seek(SnapshotRangeEnd(k.ns, k.prefix));
        continue;
      }
      if (skey != current) {
        ++r_.orphan_snapshots;
        current = skey;
      }
      ++r_.orphan_records;
      r_.orphan_bytes += it->value().size();
      it->Next();
    }
    if (!it->status().ok()) {
      r_.store_problems.push_back("records unreadable while looking for orphans: " +
                                  it->status().ToString());
    }
    return Status::Ok();
  }

  const RawDb& raw_;
  VerifyReport& r_;
  std::map<NamespaceId, NamespaceSpec> specs_;
  std::set<std::string> manifest_keys_;
  std::map<std::string, std::string> file_damage_;  // snapshot key -> why
  bool found_bad_file_ = false;
};

}  // namespace

Result<VerifyReport> VerifyStore(const std::string& path) {
  VerifyReport report;
  auto raw = RawDb::Open(path, /*read_only=*/true);
  if (!raw.ok()) {
    if (!raw.error().IsCorruption()) return raw.error();
    report.store_problems.push_back(raw.error().ToString());
    return report;
  }
  Scrub scrub(**raw, &report);
  AUXSTORE_RETURN_IF_ERROR(scrub.Run());
  return report;
}

}  // namespace auxstore::cli
