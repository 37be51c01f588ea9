// Store::Verify and Store::Repair (include/auxstore/maintenance.h).
//
// Each put's records are read once and checked against its run record's
// page and tail hashes; each manifest is then checked against the puts it
// names (pins, layouts, the damage found in exactly the pages and tails it
// uses). RocksDB's file-level checks name damaged files; damage they find
// that no snapshot reads is a store problem, never a reason to remove a
// snapshot.
#include <rocksdb/convenience.h>
#include <rocksdb/file_checksum.h>
#include <rocksdb/metadata.h>
#include <xxhash.h>

#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "auxstore/blob_hash.h"
#include "format/byte_order.h"
#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"
#include "format/run_record.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/meta_keys.h"

namespace auxstore::store_internal {
namespace {

std::string NamespaceRecordProblem(NamespaceId ns, const Status& why) {
  return "namespace " + NamespaceHex(ns) + ": its record is unreadable or missing (" +
         why.message() +
         "); its snapshots were checked against their manifests and kept. Register the "
         "namespace again (RegisterNamespace with its spec) to restore the record";
}

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

// The damage found in one put's records.
struct PutDamage {
  std::string why;          // the first problem found
  bool run_record = false;  // its run record does not decode: everything it stored is lost
  // Per layer: damaged pages (chain page numbers) and whether the tail is.
  struct Layer {
    std::set<uint32_t> pages;
    bool tail = false;
  };
  std::map<uint32_t, Layer> layers;
};

// Checks one (layer, array) stream as its chunks arrive in order: each
// page's XXH3 and the tail's against the run record's.
class StreamCheck {
 public:
  StreamCheck(const RunLayer& rl, const RunArray& ra, uint32_t page_tokens)
      : rl_(rl), ra_(ra), page_bytes_(uint64_t{page_tokens} * ra.row_bytes) {
    XXH3_64bits_reset(state_.get());
  }
  uint64_t stream_bytes() const { return uint64_t{rl_.pages} * page_bytes_ + ra_.tail_bytes; }

  void Feed(ByteSpan bytes, PutDamage::Layer* damage) {
    while (!bytes.empty()) {
      const uint64_t take = std::min<uint64_t>(bytes.size(), PartLeft());
      XXH3_64bits_update(state_.get(), bytes.data(), take);
      Advance(take, damage);
      bytes = bytes.subspan(take);
    }
  }
  // `n` bytes that could not be read: the parts they touch are damaged.
  void Skip(uint64_t n, PutDamage::Layer* damage) {
    while (n > 0) {
      const uint64_t take = std::min<uint64_t>(n, PartLeft());
      bad_ = true;
      Advance(take, damage);
      n -= take;
    }
  }
  // True when every page and the tail matched.
  bool ok() const { return ok_; }

 private:
  uint64_t PartLeft() const {
    return part_ < rl_.pages ? page_bytes_ - in_part_ : ra_.tail_bytes - in_part_;
  }
  void Advance(uint64_t n, PutDamage::Layer* damage) {
    in_part_ += n;
    if (in_part_ < (part_ < rl_.pages ? page_bytes_ : ra_.tail_bytes)) return;
    const uint64_t want = part_ < rl_.pages ? ra_.page_xxh3[part_] : ra_.tail_xxh3;
    if (bad_ || XXH3_64bits_digest(state_.get()) != want) {
      ok_ = false;
      if (part_ < rl_.pages) {
        damage->pages.insert(rl_.first_page + part_);
      } else {
        damage->tail = true;
      }
    }
    ++part_;
    in_part_ = 0;
    bad_ = false;
    XXH3_64bits_reset(state_.get());
  }

  const RunLayer& rl_;
  const RunArray& ra_;
  const uint64_t page_bytes_;
  uint32_t part_ = 0;  // the page (or, at rl_.pages, the tail) being hashed
  uint64_t in_part_ = 0;
  bool bad_ = false;
  bool ok_ = true;
  struct Free {
    void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
  };
  std::unique_ptr<XXH3_state_t, Free> state_{XXH3_createState()};
};

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
    progress_.bytes_total = s_.index_.ready() ? s_.index_.unique_bytes() : 0;
    progress_.snapshots_total = s_.index_.ready() ? s_.index_.snapshots() : 0;
    if (o_.check_files) CheckFiles();
    CheckNamespaces();
    CheckPuts();
    CheckSnapshots();
    ScanOrphanRecords();
    CheckUnreferencedPuts();
    CheckRefs();
    CheckPageEntries();
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

  // ---- puts: every record once, against its run record's hashes
  void CheckPuts() {
    std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(HotReadOptions(), s_.cf_[kRuns]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      const std::string key = it->key().ToString();
      NamespaceId ns = 0;
      PutId put = 0;
      if (!ParsePutKey(key, &ns, &put)) {
        r_.store_problems.push_back("a run record has a malformed key");
        continue;
      }
      puts_.insert(key);
      auto rec = DecodeRunRecordValue(key, Bytes(it->value()));
      if (!rec.ok()) {
        PutDamage& d = damage_[key];
        d.run_record = true;
        d.why = "the run record of put " + PutHex(put) + " is damaged: " + rec.error().message();
        continue;
      }
      ++r_.puts_checked;
      CheckPutRecords(ns, put, *rec);
      progress_.bytes_done = r_.bytes_checked;
      if (o_.progress) o_.progress(progress_);
    }
    if (!it->status().ok()) {
      r_.store_problems.push_back("the run records are unreadable: " + it->status().ToString());
    }
  }

  void CheckPutRecords(NamespaceId ns, PutId put, const RunRecord& rec) {
    const std::string begin = PutKey(ns, put), end = PutRangeEnd(ns, put);
    rocksdb::Slice upper(end);
    rocksdb::ReadOptions ro = HotReadOptions();
    ro.iterate_upper_bound = &upper;
    std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(ro, s_.cf_[kRecords]));
    it->Seek(begin);
    // One walk over the range reads every record once; after a damaged block
    // stops it, the remaining chunks are read one by one, so damage in a
    // block that holds none of this put's records is not charged to it.
    bool walking = true;
    auto stray = [&] {
      ++r_.orphan_records;
      r_.orphan_bytes += it->value().size();
      it->Next();
    };
    auto note = [&](uint32_t layer, const std::string& why) {
      PutDamage& d = damage_[begin];
      if (d.why.empty()) {
        d.why = "layer " + std::to_string(layer) + " of put " + PutHex(put) + ": " + why;
      }
    };
    for (const RunLayer& rl : rec.layers) {
      for (size_t a = 0; a < rl.arrays.size(); ++a) {
        StreamCheck check(rl, rl.arrays[a], rec.page_tokens);
        PutDamage::Layer layer_damage;
        const uint64_t stream = check.stream_bytes();
        const uint32_t chunks = ChunkCount(stream, rec.chunk_bytes);
        r_.pages_checked += rl.pages;
        for (uint32_t c = 0; c < chunks; ++c) {
          const uint64_t want_bytes = ChunkSize(stream, rec.chunk_bytes, c);
          const std::string want = RecordKey(ns, put, rl.layer, static_cast<uint8_t>(a), c);
          PinnedRecord pinned;
          ByteSpan value;
          Status got;
          if (walking) {
            while (it->Valid() && it->key().compare(want) < 0) stray();
            if (!it->Valid() && !it->status().ok()) walking = false;
          }
          if (walking) {
            if (!it->Valid() || it->key() != rocksdb::Slice(want)) {
              got = Status::Corruption("missing array " + std::to_string(a) + " chunk " +
                                       std::to_string(c));
            } else {
              value = Bytes(it->value());
            }
          } else {
            got = s_.PinRecord(want, &pinned);
            if (got.IsNotFound()) {
              got = Status::Corruption("missing array " + std::to_string(a) + " chunk " +
                                       std::to_string(c));
            }
            if (got.ok()) value = Bytes(pinned.value);
          }
          if (got.ok()) {
            auto env = DecodeEnvelope(Bytes(want), value);
            if (!env.ok()) {
              got = env.error().WithContext("array " + std::to_string(a) + " chunk " +
                                            std::to_string(c));
            } else if (env->kind != ChunkRecordKind(rl.kind) || env->payload.size() != want_bytes) {
              got =
                  Status::Corruption("array " + std::to_string(a) + " chunk " + std::to_string(c) +
                                     " holds a record of another kind or size");
            } else {
              ++r_.records_checked;
              r_.bytes_checked += env->payload.size();
              PutRecords& mine = put_records_[begin];
              ++mine.records;
              mine.bytes += value.size();
              check.Feed(env->payload, &layer_damage);
            }
          }
          if (!got.ok()) {
            note(rl.layer, got.message());
            check.Skip(want_bytes, &layer_damage);
          }
          if (walking && it->Valid() && it->key() == rocksdb::Slice(want)) it->Next();
        }
        if (chunks == 0) check.Skip(0, &layer_damage);
        if (!check.ok()) {
          note(rl.layer,
               "array " + std::to_string(a) + " holds bytes its run record's hashes do not");
          PutDamage::Layer& d = damage_[begin].layers[rl.layer];
          d.pages.insert(layer_damage.pages.begin(), layer_damage.pages.end());
          d.tail = d.tail || layer_damage.tail;
        }
      }
    }
    if (walking) {
      while (it->Valid()) stray();
      if (!it->status().ok()) {
        r_.store_problems.push_back(
            "records unreadable under put " + PutHex(put) +
            " past its own (they read back intact): " + it->status().ToString());
      }
    }
  }

  // ---- manifests: against the puts they name
  void CheckSnapshots() {
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
      auto m = DecodeManifestRecord(last, Bytes(it->value()));
      run_problem_ = false;
      Status st = m.ok() ? CheckManifest(found.ns, found.prefix, *m, &found.layer)
                         : m.error().WithContext("manifest");
      if (!st.ok() && run_problem_) {
        // Only a run record failed: derived metadata, which repair rebuilds.
        // The snapshot is judged by its own bytes, read back whole.
        r_.store_problems.push_back("snapshot " + Where(found.ns, found.prefix) +
                                    " cannot be checked against its run records (" + st.message() +
                                    "); `verify --repair` rebuilds them");
        st = s_.VerifySnapshot(found.ns, found.prefix, *m, &found.layer, nullptr);
      }
      if (st.ok()) {
        ++r_.snapshots_ok;
      } else {
        found.why = st.ToString();
        r_.corrupt.push_back(std::move(found));
      }
      ++progress_.snapshots_done;
      if (o_.progress) o_.progress(progress_);
    }
    if (!it->status().ok()) {
      // Manifests in a damaged block cannot even be listed, so they cannot
      // be named; what follows the block is not reached either.
      r_.store_problems.push_back(
          "the manifests are unreadable" +
          (last.empty() ? std::string() : " after the snapshot with key " + ToHex(last)) + ": " +
          it->status().ToString());
    }
    for (const auto& [key, users] : page_users_) {
      for (uint32_t n : users) r_.shared_pages += n > 1;
    }
  }

  const RunRecord* Run(NamespaceId ns, PutId put, Status* why) {
    const std::string key = PutKey(ns, put);
    auto d = damage_.find(key);
    if (d != damage_.end() && d->second.run_record) {
      run_problem_ = true;
      *why = Status::Corruption(d->second.why);
      return nullptr;
    }
    auto c = runs_.find(key);
    if (c == runs_.end()) {
      if (runs_.size() > 4096) runs_.clear();  // bounded: manifests of one chain hit the same few
      auto rec = s_.LoadRunRecord(ns, put);
      if (!rec.ok()) {
        run_problem_ = true;
        *why = rec.error().WithContext("run record of put " + PutHex(put));
        return nullptr;
      }
      c = runs_.emplace(key, std::move(*rec)).first;
      if (c->second && !puts_.count(key)) {
        // Past a damaged block of the run records the scan did not reach:
        // its records are checked now, before any manifest is judged by them.
        puts_.insert(key);
        ++r_.puts_checked;
        CheckPutRecords(ns, put, *c->second);
      }
    }
    if (!c->second) {
      run_problem_ = true;
      *why = Status::Corruption("snapshot is torn: it uses put " + PutHex(put) +
                                ", which has no run record");
      return nullptr;
    }
    return &*c->second;
  }

  Status CheckManifest(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                       std::optional<uint32_t>* bad_layer) {
    // The namespace record is the store's, not the snapshot's: a damaged or
    // missing one is a store problem, and the snapshot is still judged by
    // its own bytes against its manifest (only the geometry check needs it).
    auto spec = s_.NamespaceSpecFor(ns);
    if (!spec.ok() && namespace_problems_.insert(ns).second) {
      r_.store_problems.push_back(NamespaceRecordProblem(ns, spec.error()));
    }
    const std::string where = Where(ns, prefix);
    for (PutId put : UsedPuts(m)) {
      referenced_.insert(PutKey(ns, put));
      std::string ref;
      rocksdb::Status g =
          s_.db_->Get(HotReadOptions(), s_.cf_[kRefs], RefKey(ns, put, m.put_id), &ref);
      if (g.IsNotFound() && (put != m.put_id || puts_.count(PutKey(ns, put)))) {
        r_.store_problems.push_back("snapshot " + where + " has no ref to put " + PutHex(put) +
                                    " it reads: a removal could reclaim it");
      }
    }
    for (const LayerEntry& l : m.layers) {
      *bad_layer = l.layer;
      if (spec.ok()) {
        AUXSTORE_RETURN_IF_ERROR(CheckLayerBlob(l.layer, l.kind, l.header, l.bytes, *spec));
      }
      // The layer digest again, from the hashes the puts recorded for the
      // bytes just verified: the manifest names exactly those bytes.
      std::vector<std::vector<uint64_t>> page_xxh3(l.row_bytes.size());
      std::vector<uint64_t> tail_xxh3(l.row_bytes.size(), XXH3_64bits(nullptr, 0));
      for (const PageRun& r : l.runs) {
        Status why;
        const RunRecord* owner = Run(ns, r.owner, &why);
        if (owner == nullptr) return why;
        const RunLayer* rl = owner->FindLayer(l.layer);
        if (rl == nullptr || rl->kind != l.kind || owner->page_tokens != m.page_tokens ||
            owner->chunk_bytes != r.owner_chunk_bytes || rl->first_page != r.owner_first_page ||
            rl->arrays.size() != l.row_bytes.size() || r.first_page < rl->first_page ||
            r.first_page + r.pages > rl->first_page + rl->pages) {
          return Status::Corruption("layer " + std::to_string(l.layer) + " pages [" +
                                    std::to_string(r.first_page) + ", " +
                                    std::to_string(r.first_page + r.pages) +
                                    ") are not pages put " + PutHex(r.owner) + " stored");
        }
        for (size_t a = 0; a < rl->arrays.size(); ++a) {
          if (rl->arrays[a].row_bytes != l.row_bytes[a]) {
            return Status::Corruption("layer " + std::to_string(l.layer) +
                                      " has rows of another size than put " + PutHex(r.owner) +
                                      " stored");
          }
          const auto& h = rl->arrays[a].page_xxh3;
          page_xxh3[a].insert(page_xxh3[a].end(), h.begin() + (r.first_page - rl->first_page),
                              h.begin() + (r.first_page - rl->first_page + r.pages));
        }
        auto d = damage_.find(PutKey(ns, r.owner));
        if (d != damage_.end()) {
          auto dl = d->second.layers.find(l.layer);
          if (dl != d->second.layers.end()) {
            auto bad = dl->second.pages.lower_bound(r.first_page);
            if (bad != dl->second.pages.end() && *bad < r.first_page + r.pages) {
              charged_.insert(d->first);
              return Status::Corruption("page " + std::to_string(*bad) + " of layer " +
                                        std::to_string(l.layer) + " (stored by put " +
                                        PutHex(r.owner) + ") is damaged: " + d->second.why);
            }
          }
        }
        std::string users_key = PutKey(ns, r.owner);
        users_key.append(reinterpret_cast<const char*>(&l.layer), sizeof l.layer);
        auto& users = page_users_[users_key];
        if (users.size() < rl->pages) users.resize(rl->pages);
        for (uint32_t p = r.first_page; p < r.first_page + r.pages; ++p) {
          ++users[p - rl->first_page];
        }
      }
      bool own_bytes = false;
      for (size_t a = 0; a < l.row_bytes.size(); ++a) own_bytes |= TailBytes(m, l, a) > 0;
      if (own_bytes) {
        Status why;
        const RunRecord* own = Run(ns, m.put_id, &why);
        if (own == nullptr) return why;
        const RunLayer* rl = own->FindLayer(l.layer);
        bool fits =
            rl != nullptr && rl->kind == l.kind && rl->arrays.size() == l.row_bytes.size() &&
            rl->first_page + rl->pages == l.full_pages() && own->chunk_bytes == m.chunk_bytes;
        for (size_t a = 0; fits && a < l.row_bytes.size(); ++a) {
          fits = rl->arrays[a].tail_bytes == TailBytes(m, l, a);
          if (fits) tail_xxh3[a] = rl->arrays[a].tail_xxh3;
        }
        if (!fits) {
          return Status::Corruption("layer " + std::to_string(l.layer) +
                                    "'s own rows are not what its put " + PutHex(m.put_id) +
                                    " stored");
        }
        auto d = damage_.find(PutKey(ns, m.put_id));
        if (d != damage_.end()) {
          auto dl = d->second.layers.find(l.layer);
          if (dl != d->second.layers.end() && dl->second.tail) {
            charged_.insert(d->first);
            return Status::Corruption("layer " + std::to_string(l.layer) +
                                      "'s own rows are damaged: " + d->second.why);
          }
        }
      }
      AUXSTORE_RETURN_IF_ERROR(CheckLayerDigest(l, LayerDigest(l.header, page_xxh3, tail_xxh3)));
    }
    bad_layer->reset();
    return Status::Ok();
  }

  // ---- what no snapshot uses
  // Records of puts that have no run record (a crash before the commit, or
  // between a reclaim's commit and its delete).
  void ScanOrphanRecords() {
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
        const std::string pkey = PutKey(k.ns, k.put);
        if (pkey != group) {
          group = pkey;
          if (puts_.count(pkey)) {  // checked with its put
            it->Seek(PutRangeEnd(k.ns, k.put));
            continue;
          }
          ++r_.orphan_puts;
        }
        ++r_.orphan_records;
        r_.orphan_bytes += it->value().size();
        it->Next();
      }
      if (it->status().ok()) return;
      // Damage where no put has records: name it, skip past the group.
      r_.store_problems.push_back(
          "records unreadable outside any put's records" +
          (group.empty() ? std::string() : " (after key " + ToHex(group) + ")") + ": " +
          it->status().ToString());
      if (group.empty() || ++skips_ > 16) return;
      NamespaceId ns = 0;
      PutId put = 0;
      ParsePutKey(group, &ns, &put);
      it->Seek(PutRangeEnd(ns, put));
    }
  }

  // Run records no manifest uses: their records are unreachable.
  void CheckUnreferencedPuts() {
    for (const std::string& key : puts_) {
      if (referenced_.count(key)) continue;
      ++r_.orphan_puts;
      if (auto p = put_records_.find(key); p != put_records_.end()) {
        r_.orphan_records += p->second.records;  // what compacting it frees
        r_.orphan_bytes += p->second.bytes;
      }
      auto d = damage_.find(key);
      if (d != damage_.end()) damage_.erase(d);  // nobody reads it: not a snapshot's damage
    }
    // Damage in pages or tails of used puts that no snapshot reads.
    for (const auto& [key, d] : damage_) {
      if (!charged_.count(key))
        r_.store_problems.push_back(d.why + " (in bytes no snapshot reads)");
    }
  }

  // Refs whose snapshot is gone, or is another put now.
  void CheckRefs() {
    std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(HotReadOptions(), s_.cf_[kRefs]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      NamespaceId ns = 0;
      PutId owner = 0, referrer = 0;
      NamespaceId sns = 0;
      Prefix prefix;
      if (!ParseRefKey(it->key().ToStringView(), &ns, &owner, &referrer) ||
          !ParseSnapshotKey(it->value().ToStringView(), &sns, &prefix)) {
        ++r_.stale_entries;
        continue;
      }
      std::string value;
      rocksdb::Status g = s_.db_->Get(HotReadOptions(), s_.cf_[kManifests], it->value(), &value);
      auto m = g.ok() ? DecodeManifestRecord(it->value().ToString(), Bytes(value))
                      : Result<Manifest>(Status::NotFound(""));
      if (!m.ok() || m->put_id != referrer) ++r_.stale_entries;
    }
    if (!it->status().ok()) {
      r_.store_problems.push_back("the refs are unreadable: " + it->status().ToString());
    }
  }

  // Page entries naming a put that is gone (a share missed, nothing lost).
  void CheckPageEntries() {
    std::unique_ptr<rocksdb::Iterator> it(s_.db_->NewIterator(HotReadOptions(), s_.cf_[kPages]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      PutId owner = 0;
      uint32_t page = 0;
      NamespaceId ns = 0;
      const std::string key = it->key().ToString();
      if (key.size() != kPageKeyBytes || !DecodePageRef(key, Bytes(it->value()), &owner, &page)) {
        ++r_.stale_entries;
        continue;
      }
      ns = internal::GetBE64(reinterpret_cast<const uint8_t*>(key.data()));
      if (!puts_.count(PutKey(ns, owner))) ++r_.stale_entries;
    }
    if (!it->status().ok()) {
      r_.store_problems.push_back("the page index is unreadable: " + it->status().ToString());
    }
  }

  // A damaged file whose damage no corrupt snapshot or damaged put shows.
  void ReportUnexplainedFiles() {
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
  VerifyProgress progress_;
  std::vector<DamagedFile> damaged_;
  std::map<std::string, PutDamage> damage_;                         // PutKey -> damage found
  std::unordered_set<std::string> puts_;                            // every run record's key
  std::unordered_set<std::string> referenced_;                      // puts some manifest uses
  std::unordered_map<std::string, std::optional<RunRecord>> runs_;  // a cache
  // (PutKey, layer) -> snapshots using each page the put stored for it.
  std::unordered_map<std::string, std::vector<uint32_t>> page_users_;
  std::set<std::string> charged_;  // damaged puts some corrupt snapshot reads
  struct PutRecords {
    uint64_t records = 0, bytes = 0;
  };
  std::unordered_map<std::string, PutRecords> put_records_;  // PutKey -> its intact records
  int skips_ = 0;
  bool run_problem_ = false;                  // the manifest being checked failed on a run record
  std::set<NamespaceId> namespace_problems_;  // reported once each
};

Status DbStore::VerifySnapshot(NamespaceId ns, const Prefix& prefix, const Manifest& m,
                               std::optional<uint32_t>* bad_layer, VerifyReport* report) {
  // Reads the snapshot back whole, as a restore does, with no side effect:
  // every piece verified, each layer to its XXH3.
  // A damaged or missing namespace record is the store's problem, never the
  // snapshot's: its bytes are judged against its manifest all the same.
  auto spec = NamespaceSpecFor(ns);
  if (!spec.ok() && report != nullptr) {
    report->store_problems.push_back(NamespaceRecordProblem(ns, spec.error()));
  }
  for (const LayerEntry& l : m.layers) {
    *bad_layer = l.layer;
    if (spec.ok()) {
      AUXSTORE_RETURN_IF_ERROR(CheckLayerBlob(l.layer, l.kind, l.header, l.bytes, *spec));
    }
    LayerHasher hasher(m, l);
    hasher.Update(l.header);
    for (const LayerPiece& piece : PlanPieces(m, l)) {
      PinnedRecord pinned;
      AUXSTORE_RETURN_IF_ERROR(PinPiece(ns, prefix, l.layer, piece, &pinned));
      ByteSpan bytes;
      AUXSTORE_RETURN_IF_ERROR(
          VerifyPiece(ns, prefix, l, piece, Bytes(pinned.value), &hasher, nullptr, &bytes));
      if (report) {
        ++report->records_checked;
        report->bytes_checked += bytes.size();
      }
    }
    AUXSTORE_RETURN_IF_ERROR(CheckLayerDigest(l, hasher.Digest()));
  }
  bad_layer->reset();
  return Status::Ok();
}

Result<VerifyReport> DbStore::Verify(const VerifyOptions& options) {
  VerifyReport report;
  Verifier v(*this, options, &report);
  AUXSTORE_RETURN_IF_ERROR(v.Run());
  return report;
}

// Removes the snapshots `report` names corrupt that still read back damaged.
Status DbStore::RemoveCorrupt(const VerifyReport& report, RepairReport* out,
                              std::vector<std::string>* left_alone) {
  for (const CorruptSnapshot& c : report.corrupt) {
    auto m = LoadManifest(c.ns, c.prefix);  // a damaged manifest is quarantined by the load
    if (m.ok()) {
      std::optional<uint32_t> layer;
      Status why = VerifySnapshot(c.ns, c.prefix, *m, &layer, nullptr);
      if (why.ok()) {
        left_alone->push_back("snapshot " + Where(c.ns, c.prefix) +
                              " reads back intact now; left alone");
        continue;
      }
      // Removing it reclaims every put no remaining snapshot uses.
      Status q = QuarantineIfUnchanged(c.ns, c.prefix, *m, why);
      if (q.IsNotFound()) continue;  // erased or replaced meanwhile
      if (q != why) return q.WithContext("quarantine " + Where(c.ns, c.prefix));
    } else if (m.error().IsNotFound()) {
      continue;  // gone since the report
    } else if (!m.error().IsCorruption()) {
      return m.error();
    }
    out->removed.push_back(c);
  }
  return Status::Ok();
}

// Every column family with a damaged file is rewritten around it and the
// derived metadata is rebuilt (db_store_rebuild.cc); the store is verified
// again and the snapshots still damaged go. After a repair, verify is clean
// unless a problem is listed as not repaired.
Result<RepairReport> DbStore::Repair(const VerifyReport& report) {
  AUXSTORE_RETURN_IF_ERROR(CheckWritable());
  RepairReport out;
  out.accepted_data_loss = lost_commits_at_open_ > 0;
  std::vector<std::string> left_alone;
  if (report.store_problems.empty() && report.corrupt.empty()) return out;
  AUXSTORE_ASSIGN_OR_RETURN(auto damaged, DamagedFiles());
  // With damaged files, the snapshots are judged after the rewrite, which
  // keeps every intact entry of a damaged block.
  if (damaged.empty()) {
    AUXSTORE_RETURN_IF_ERROR(RemoveCorrupt(report, &out, &left_alone));
  }
  bool changed = !damaged.empty();
  for (const auto& [cf, files] : damaged) {
    Status s = RewriteFamily(cf, files, &out);
    if (!s.ok()) out.not_repaired.push_back(s.ToString());
  }
  Status rebuilt = RebuildDerived(&out, &changed);
  if (!rebuilt.ok()) out.not_repaired.push_back(rebuilt.ToString());
  if (!changed) {
    out.not_repaired.insert(out.not_repaired.end(), report.store_problems.begin(),
                            report.store_problems.end());
  } else {
    VerifyReport again;
    const VerifyOptions options;  // the Verifier keeps a reference: not a temporary
    Verifier v(*this, options, &again);
    AUXSTORE_RETURN_IF_ERROR(v.Run());
    AUXSTORE_RETURN_IF_ERROR(RemoveCorrupt(again, &out, &left_alone));
    out.not_repaired.insert(out.not_repaired.end(), again.store_problems.begin(),
                            again.store_problems.end());
  }
  out.not_repaired.insert(out.not_repaired.end(), left_alone.begin(), left_alone.end());
  return out;
}

}  // namespace auxstore::store_internal
