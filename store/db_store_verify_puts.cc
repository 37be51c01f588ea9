// DbStore::Verifier, the puts (db_store_verifier.h): every put's records
// read once and checked against its run record's page and tail hashes
// (record_check.h: one definition of a good record), then what no snapshot
// uses: orphan records, puts nobody refs, stale refs and page entries (the
// page ledger's scans).
#include <memory>

#include "format/envelope.h"
#include "format/layer_layout.h"
#include "format/manifest.h"
#include "format/run_record.h"
#include "format/xxh3.h"
#include "store/bytes.h"
#include "store/db_store_verifier.h"
#include "store/record_check.h"

namespace auxstore::store_internal {
namespace {

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

Status DbStore::Verifier::Run() {
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

// ---- puts: every record once, against its run record's hashes
void DbStore::Verifier::CheckPuts() {
  Status scan = s_.ledger_.ForEachRun([&](const RunEntry& e) {
    if (e.malformed) {
      r_.store_problems.push_back("a run record has a malformed key");
      return true;
    }
    const std::string key = PutKey(e.ns, e.put);
    puts_.insert(key);
    if (!e.run.ok()) {
      PutDamage& d = damage_[key];
      d.run_record = true;
      d.why = "the run record of put " + PutHex(e.put) + " is damaged: " + e.run.error().message();
      return true;
    }
    ++r_.puts_checked;
    CheckPutRecords(e.ns, e.put, *e.run);
    progress_.bytes_done = r_.bytes_checked;
    if (o_.progress) o_.progress(progress_);
    return true;
  });
  if (!scan.ok()) r_.store_problems.push_back("the run records are unreadable: " + scan.message());
}

void DbStore::Verifier::CheckPutRecords(NamespaceId ns, PutId put, const RunRecord& rec) {
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
          if (!got.ok() && !got.IsNotFound() && !got.IsCorruption()) {
            // Damage in a table file that does not hold this record (a
            // Seek reads every level-0 file): a store problem, which repair
            // clears, never this put's damage. Its records stay unchecked.
            r_.store_problems.push_back("records of put " + PutHex(put) +
                                        " could not be checked: " + got.message());
            return;
          }
          if (got.IsNotFound()) {
            got = Status::Corruption("missing array " + std::to_string(a) + " chunk " +
                                     std::to_string(c));
          }
          if (got.ok()) value = Bytes(pinned.value);
        }
        if (got.ok()) {
          auto bytes = CheckChunkRecord(Bytes(want), value, {rl.kind, 0, want_bytes, true});
          if (!bytes.ok()) {
            got = bytes.error().WithContext("array " + std::to_string(a) + " chunk " +
                                            std::to_string(c));
          } else {
            ++r_.records_checked;
            r_.bytes_checked += bytes->size();
            PutRecords& mine = put_records_[begin];
            ++mine.records;
            mine.bytes += value.size();
            check.Feed(*bytes, &layer_damage);
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

// ---- what no snapshot uses
// Records of puts that have no run record (a crash before the commit, or
// between a reclaim's commit and its delete).
void DbStore::Verifier::ScanOrphanRecords() {
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
void DbStore::Verifier::CheckUnreferencedPuts() {
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
    if (!charged_.count(key)) r_.store_problems.push_back(d.why + " (in bytes no snapshot reads)");
  }
}

// Refs whose snapshot is gone, or is another put now.
void DbStore::Verifier::CheckRefs() {
  Status scan = s_.ledger_.ForEachRef([&](const RefEntry& e) {
    if (e.malformed) {
      ++r_.stale_entries;
      return true;
    }
    const std::string skey = SnapshotKey(e.snapshot.ns, e.snapshot.prefix);
    std::string value;
    rocksdb::Status g = s_.db_->Get(HotReadOptions(), s_.cf_[kManifests], skey, &value);
    auto m =
        g.ok() ? DecodeManifestRecord(skey, Bytes(value)) : Result<Manifest>(Status::NotFound(""));
    if (!m.ok() || m->put_id != e.referrer) ++r_.stale_entries;
    return true;
  });
  if (!scan.ok()) r_.store_problems.push_back("the refs are unreadable: " + scan.message());
}

// Page entries naming a put that is gone (a share missed, nothing lost).
void DbStore::Verifier::CheckPageEntries() {
  Status scan = s_.ledger_.ForEachPageEntry([&](const PageEntry& e) {
    if (e.malformed || !puts_.count(PutKey(e.id.ns, e.owner))) ++r_.stale_entries;
    return true;
  });
  if (!scan.ok()) r_.store_problems.push_back("the page index is unreadable: " + scan.message());
}

const RunRecord* DbStore::Verifier::RunRecordOf(NamespaceId ns, PutId put, Status* why) {
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
    auto rec = s_.ledger_.LoadRun(ns, put);
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

}  // namespace auxstore::store_internal
