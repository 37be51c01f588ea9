// DbStore::Verifier, the files and namespaces (db_store_verifier.h):
// RocksDB's own checks over every live file, the namespace records, and the
// damaged files whose damage no snapshot shows.
#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/metadata.h>

#include <cstdio>
#include <memory>

#include "store/db_store_verifier.h"

namespace auxstore::store_internal {
namespace {

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

// RocksDB's own checks over every live file; on a failure, each file on
// its own so every bad one is named (the DB-wide calls stop at the first).
void DbStore::Verifier::CheckFiles() {
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
      auto sum =
          ComputeFileChecksum(s_.setup_.env.get(), d.file, factory, f.file_checksum_func_name);
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

void DbStore::Verifier::CheckNamespaces() {
  std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(HotReadOptions(), s_.cf_[kNamespaces]));
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    NamespaceId ns = 0;
    if (!ParseNamespaceKey(it->key().ToStringView(), &ns)) {
      r_.store_problems.push_back("a namespace record has a malformed key");
      continue;
    }
    auto spec = s_.NamespaceSpecFor(ns);
    if (!spec.ok()) {
      r_.store_problems.push_back("namespace " + NamespaceHex(ns) + ": " + spec.error().ToString());
      continue;
    }
    ++r_.namespaces;
  }
  if (!it->status().ok()) {
    r_.store_problems.push_back("namespace records unreadable: " + it->status().ToString());
  }
}

// A damaged file whose damage no corrupt snapshot or damaged put shows.
void DbStore::Verifier::ReportUnexplainedFiles() {
  for (const DamagedFile& d : damaged_) {
    bool explained = false;
    auto overlaps = [&](const std::string& lo, const std::string& hi) {
      return d.smallest < hi && lo <= d.largest;
    };
    for (const CorruptSnapshot& c : r_.corrupt) {
      const std::string k = SnapshotKey(c.ns, c.prefix);
      explained |= d.cf == kManifests && overlaps(k, k + '\0');
    }
    for (const auto& [pkey, dmg] : damage_) {
      NamespaceId ns = 0;
      PutId put = 0;
      ParsePutKey(pkey, &ns, &put);
      explained |= (d.cf == kRecords && overlaps(pkey, PutRangeEnd(ns, put))) ||
                   (d.cf == kRuns && dmg.run_record && overlaps(pkey, pkey + '\0'));
    }
    if (explained) continue;
    r_.store_problems.push_back("file " + d.file + " (" + s_.setup_.cfs[d.cf].name +
                                ") is damaged (" + d.why +
                                "), but no snapshot's bytes show it: the damage is in "
                                "blocks no snapshot reads (an index or filter block, or "
                                "orphan records)");
  }
}

std::string DbStore::Verifier::ToHex(const std::string& bytes) {
  std::string out;
  char b[3];
  for (unsigned char c : bytes) {
    std::snprintf(b, sizeof b, "%02x", c);
    out += b;
  }
  return out;
}

}  // namespace auxstore::store_internal
