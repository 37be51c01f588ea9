// RocksPageLedger: the put path (share, commit), release, pins and reclaim.
//
// Removal: in one synced batch, under mu_, the snapshot's refs to every put
// it used go; each of those puts that has no other ref left (and is not
// pinned by a put in flight) is garbage: its run record and the page index
// entries pointing at it go in the same batch. Only after that commit are
// the garbage puts' records deleted (by the store), so no visible manifest
// can ever name a page whose records are gone; a crash in between leaves
// orphan records that `compact` removes.
#include "store/page_ledger_rocks.h"

#include <rocksdb/write_batch.h>

#include <algorithm>
#include <set>

#include "format/byte_order.h"
#include "format/envelope.h"
#include "store/bytes.h"
#include "store/commit_batch.h"
#include "store/db_store.h"
#include "store/keys.h"

namespace auxstore::store_internal {

std::string EncodePageRef(NamespaceId ns, uint32_t page_tokens, const Prefix& chain_hash,
                          PutId owner, uint32_t page) {
  std::string payload;
  internal::AppendLE64(&payload, owner);
  internal::AppendLE32(&payload, page);
  const std::string key = PageKey(ns, page_tokens, chain_hash);
  return EncodeEnvelope(Bytes(key), RecordKind::kPageRef, Bytes(payload));
}

bool DecodePageRef(const std::string& key, ByteSpan value, PutId* owner, uint32_t* page) {
  auto env = DecodeEnvelope(Bytes(key), value);
  if (!env.ok() || env->kind != RecordKind::kPageRef || env->payload.size() != 12) return false;
  *owner = internal::GetLE64(env->payload.data());
  *page = internal::GetLE32(env->payload.data() + 8);
  return true;
}

Result<RunRecord> DecodeRunRecordValue(const std::string& key, ByteSpan value) {
  AUXSTORE_ASSIGN_OR_RETURN(EnvelopeView env, DecodeEnvelope(Bytes(key), value));
  if (env.kind != RecordKind::kRun) {
    return Status::Corruption("run record holds a record of kind " +
                              std::to_string(static_cast<unsigned>(env.kind)));
  }
  return DecodeRunRecord(env.payload);
}

namespace {

// Whether `owner`'s run record holds page `pg` of `want` with the same bytes.
bool HoldsSamePage(const RunRecord& owner, uint32_t page_tokens, const LayerPages& want,
                   uint32_t pg) {
  if (owner.page_tokens != page_tokens) return false;
  const RunLayer* rl = owner.FindLayer(want.layer);
  if (rl == nullptr || rl->kind != want.kind || pg < rl->first_page ||
      pg >= rl->first_page + rl->pages || rl->arrays.size() != want.row_bytes.size()) {
    return false;
  }
  for (size_t a = 0; a < rl->arrays.size(); ++a) {
    if (rl->arrays[a].row_bytes != want.row_bytes[a] ||
        rl->arrays[a].page_xxh3[pg - rl->first_page] != (*want.page_xxh3)[a][pg]) {
      return false;
    }
  }
  return true;
}

// Whether `owner` stored chain page `pg` under chained hash `end` (the page
// index says so for the owners it names; a put named directly must too).
bool HoldsChainPage(const RunRecord& owner, uint32_t pg, const Prefix& end) {
  return pg >= owner.chain_first_page && pg - owner.chain_first_page < owner.chain.size() &&
         owner.chain[pg - owner.chain_first_page] == end;
}

}  // namespace

Result<SharedChain> RocksPageLedger::ShareChain(NamespaceId ns, uint32_t page_tokens,
                                                std::span<const Prefix> page_ends,
                                                std::span<const LayerPages> layers,
                                                ShareFrom from) {
  SharedChain out(this, ns);
  out.layers.resize(layers.size());
  if (page_ends.empty() || from.source == ShareFrom::Source::kNone) return out;
  std::lock_guard lock(mu_);
  std::vector<PutId> owner_at(page_ends.size(), 0);
  std::map<PutId, std::optional<RunRecord>> runs;
  auto load = [&](PutId o) {
    if (runs.count(o)) return;
    auto rec = LoadRun(ns, o);
    runs[o] = rec.ok() ? std::move(*rec) : std::nullopt;
  };
  if (from.source == ShareFrom::Source::kPut) {
    // Every page from that put, where it holds the page (HoldsSamePage).
    std::fill(owner_at.begin(), owner_at.end(), from.put);
    load(from.put);
  } else {
    std::vector<std::string> keys;
    keys.reserve(page_ends.size());
    for (const Prefix& end : page_ends) keys.push_back(PageKey(ns, page_tokens, end));
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    std::vector<rocksdb::PinnableSlice> values(keys.size());
    std::vector<rocksdb::Status> statuses(keys.size());
    db_->MultiGet(rocksdb::ReadOptions(), cf_[kPages], keys.size(), slices.data(), values.data(),
                  statuses.data());
    for (size_t pg = 0; pg < keys.size(); ++pg) {
      if (statuses[pg].IsNotFound()) continue;
      if (!statuses[pg].ok()) return FromRocks(statuses[pg], "look up pages");
      PutId o = 0;
      uint32_t at = 0;
      if (!DecodePageRef(keys[pg], Bytes(values[pg]), &o, &at) || at != pg) continue;
      owner_at[pg] = o;
      load(o);
    }
  }
  for (size_t i = 0; i < layers.size(); ++i) {
    const LayerPages& want = layers[i];
    SharedChain::Layer& share = out.layers[i];
    uint32_t pg = 0;
    for (; pg < want.full_pages && pg < owner_at.size(); ++pg) {
      const PutId o = owner_at[pg];
      const auto run = runs.find(o);
      if (o == 0 || run == runs.end() || !run->second ||
          !HoldsSamePage(*run->second, page_tokens, want, pg) ||
          (from.source == ShareFrom::Source::kPut &&
           !HoldsChainPage(*run->second, pg, page_ends[pg]))) {
        break;
      }
      if (!share.runs.empty() && share.runs.back().owner == o) {
        ++share.runs.back().pages;
      } else {
        const RunLayer* rl = run->second->FindLayer(want.layer);
        share.runs.push_back({o, rl->first_page, run->second->chunk_bytes, pg, 1});
      }
      if (out.owners.emplace(o, run->second->stored_bytes()).second) ++pins_[{ns, o}];
    }
    share.own_first = pg;
  }
  return out;
}

Status RocksPageLedger::CommitPut(const PutEntries& put, CommitBatch* batch,
                                  const CommitFn& commit) {
  std::lock_guard lock(mu_);
  AddPutEntriesLocked(put, {}, batch);
  return commit(batch);
}

void RocksPageLedger::AddPutEntriesLocked(const PutEntries& put, const std::set<PutId>& reclaimed,
                                          CommitBatch* batch) {
  const NamespaceId ns = put.snapshot.ns;
  const std::string skey = SnapshotKey(ns, put.snapshot.prefix);
  rocksdb::WriteBatch& b = batch->rocks;
  if (put.run != nullptr) {
    const RunRecord& run = *put.run;
    const std::string rkey = PutKey(ns, put.put);
    (void)b.Put(cf_[kRuns], rkey,
                EncodeEnvelope(Bytes(rkey), RecordKind::kRun, Bytes(EncodeRunRecord(run))));
    (void)b.Put(cf_[kRefs], RefKey(ns, put.put, put.put), skey);
    for (size_t i = 0; i < run.chain.size(); ++i) {
      const std::string pkey = PageKey(ns, run.page_tokens, run.chain[i]);
      if (!PageEntryFreeLocked(pkey, reclaimed)) continue;  // the first writer's stays
      (void)b.Put(cf_[kPages], pkey,
                  EncodePageRef(ns, run.page_tokens, run.chain[i], put.put,
                                run.chain_first_page + static_cast<uint32_t>(i)));
    }
  }
  for (PutId o : put.owners) (void)b.Put(cf_[kRefs], RefKey(ns, o, put.put), skey);
}

// Whether page entry `pkey` may be written: none is stored, or the stored one
// names a put this batch reclaims.
bool RocksPageLedger::PageEntryFreeLocked(const std::string& pkey,
                                          const std::set<PutId>& reclaimed) {
  std::string present;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kPages], pkey, &present);
  if (g.IsNotFound()) return true;
  PutId o = 0;
  uint32_t page = 0;
  return g.ok() && DecodePageRef(pkey, Bytes(present), &o, &page) && reclaimed.count(o) > 0;
}

Result<std::vector<PutId>> RocksPageLedger::CommitRewrite(const PutEntries& put, PutId old_self,
                                                          std::span<const PutId> old_used,
                                                          CommitBatch* batch,
                                                          const CommitFn& commit) {
  const NamespaceId ns = put.snapshot.ns;
  std::set<PutId> still_read(put.owners.begin(), put.owners.end());
  std::vector<PutId> garbage;
  std::lock_guard lock(mu_);
  for (PutId o : old_used) {
    (void)batch->rocks.Delete(cf_[kRefs], RefKey(ns, o, old_self));
    if (still_read.count(o)) continue;  // the new put refs it in this batch
    AUXSTORE_ASSIGN_OR_RETURN(bool others, HasRefsOtherThanLocked(ns, o, old_self));
    if (others || pins_.count({ns, o})) continue;
    AUXSTORE_ASSIGN_OR_RETURN(bool reclaimed, AddReclaimLocked(ns, o, batch));
    if (reclaimed) garbage.push_back(o);
  }
  const std::set<PutId> reclaimed(garbage.begin(), garbage.end());
  AddPutEntriesLocked(put, reclaimed, batch);
  // The page entries of the reclaimed puts, to the owners that hold the
  // same chain pages (the new put's own took theirs above).
  std::set<std::string> taken;
  if (put.run != nullptr) {
    for (const Prefix& end : put.run->chain) taken.insert(PageKey(ns, put.run->page_tokens, end));
  }
  for (PutId o : put.owners) {
    AUXSTORE_ASSIGN_OR_RETURN(std::optional<RunRecord> run, LoadRun(ns, o));
    if (!run) continue;
    for (size_t i = 0; i < run->chain.size(); ++i) {
      const std::string pkey = PageKey(ns, run->page_tokens, run->chain[i]);
      if (!taken.insert(pkey).second) continue;
      std::string present;
      PutId holder = 0;
      uint32_t page = 0;
      if (!db_->Get(rocksdb::ReadOptions(), cf_[kPages], pkey, &present).ok() ||
          !DecodePageRef(pkey, Bytes(present), &holder, &page) || !reclaimed.count(holder)) {
        continue;  // absent stays absent: RemoveStalePageEntries' rule
      }
      (void)batch->rocks.Put(cf_[kPages], pkey,
                             EncodePageRef(ns, run->page_tokens, run->chain[i], o,
                                           run->chain_first_page + static_cast<uint32_t>(i)));
    }
  }
  AUXSTORE_RETURN_IF_ERROR(commit(batch));
  return garbage;
}

Result<size_t> RocksPageLedger::LeadingStoredPages(NamespaceId ns, uint32_t page_tokens,
                                                   std::span<const Prefix> page_ends) {
  // Leading pages stored in [begin, end), in one MultiGet.
  auto stored = [&](size_t begin, size_t end) -> Result<size_t> {
    const size_t n = end - begin;
    std::vector<std::string> keys;
    keys.reserve(n);
    for (size_t p = begin; p < end; ++p) keys.push_back(PageKey(ns, page_tokens, page_ends[p]));
    std::vector<rocksdb::Slice> slices(keys.begin(), keys.end());
    std::vector<rocksdb::PinnableSlice> values(n);
    std::vector<rocksdb::Status> statuses(n);
    db_->MultiGet(rocksdb::ReadOptions(), cf_[kPages], n, slices.data(), values.data(),
                  statuses.data());
    for (size_t i = 0; i < n; ++i) {
      if (statuses[i].IsNotFound()) return i;
      if (!statuses[i].ok()) return FromRocks(statuses[i], "look up a chain's pages");
      PutId owner = 0;
      uint32_t page = 0;
      if (!DecodePageRef(keys[i], Bytes(values[i]), &owner, &page) || page != begin + i) return i;
    }
    return n;
  };
  if (page_ends.empty()) return size_t{0};
  // The first alone: the usual miss is a first-page miss, answered by one
  // lookup without probing the others.
  AUXSTORE_ASSIGN_OR_RETURN(size_t n, stored(0, 1));
  if (n == 1 && page_ends.size() > 1) {
    AUXSTORE_ASSIGN_OR_RETURN(size_t more, stored(1, page_ends.size()));
    n += more;
  }
  return n;
}

Result<bool> RocksPageLedger::HasRun(NamespaceId ns, PutId put) {
  std::string value;
  rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kRuns], PutKey(ns, put), &value);
  if (g.IsNotFound()) return false;
  if (!g.ok()) return FromRocks(g, "look up the run record of put " + PutHex(put));
  return true;
}

Result<std::vector<PutId>> RocksPageLedger::ReleaseSnapshot(NamespaceId ns, PutId self,
                                                            std::span<const PutId> used,
                                                            CommitBatch* batch,
                                                            const CommitFn& commit) {
  std::vector<PutId> garbage;
  std::lock_guard lock(mu_);
  for (PutId o : used) {
    (void)batch->rocks.Delete(cf_[kRefs], RefKey(ns, o, self));
    AUXSTORE_ASSIGN_OR_RETURN(bool others, HasRefsOtherThanLocked(ns, o, self));
    if (others || pins_.count({ns, o})) continue;
    AUXSTORE_ASSIGN_OR_RETURN(bool reclaimed, AddReclaimLocked(ns, o, batch));
    if (reclaimed) garbage.push_back(o);
  }
  AUXSTORE_RETURN_IF_ERROR(commit(batch));
  return garbage;
}

Result<bool> RocksPageLedger::HasRefsOtherThanLocked(NamespaceId ns, PutId owner, PutId referrer) {
  const std::string begin = RefKey(ns, owner, 0);
  const std::string end = PutRangeEnd(ns, owner);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, cf_[kRefs]));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    NamespaceId n = 0;
    PutId o = 0, r = 0;
    if (ParseRefKey(it->key().ToStringView(), &n, &o, &r) && r != referrer) return true;
  }
  AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan refs"));
  return false;
}

Result<bool> RocksPageLedger::AddReclaimLocked(NamespaceId ns, PutId owner, CommitBatch* batch) {
  auto loaded = LoadRun(ns, owner);
  if (!loaded.ok() && !loaded.error().IsCorruption()) return loaded.error();
  std::optional<RunRecord> rec;
  if (loaded.ok()) rec = std::move(*loaded);
  if (!rec) {
    // A run record that does not decode is removed too (its records are
    // unreachable); a missing one means there is nothing to reclaim.
    std::string raw;
    if (!db_->Get(rocksdb::ReadOptions(), cf_[kRuns], PutKey(ns, owner), &raw).ok()) return false;
  }
  (void)batch->rocks.Delete(cf_[kRuns], PutKey(ns, owner));
  if (rec) {
    for (const Prefix& end : rec->chain) {
      const std::string pkey = PageKey(ns, rec->page_tokens, end);
      std::string value;
      if (!db_->Get(rocksdb::ReadOptions(), cf_[kPages], pkey, &value).ok()) continue;
      PutId o = 0;
      uint32_t page = 0;
      if (!DecodePageRef(pkey, Bytes(value), &o, &page) || o == owner) {
        (void)batch->rocks.Delete(cf_[kPages], pkey);
      }
    }
  }
  return true;
}

void RocksPageLedger::Unpin(NamespaceId ns, PutId put) {
  {
    std::lock_guard lock(mu_);
    auto it = pins_.find({ns, put});
    if (it == pins_.end() || --it->second > 0) return;
    pins_.erase(it);
  }
  // Its last user may have gone while a put had it pinned, and the put did
  // not commit: nobody else would reclaim it now.
  if (host_.writable()) (void)ReclaimIfUnused(ns, put);
}

Result<bool> RocksPageLedger::ReclaimIfUnused(NamespaceId ns, PutId put) {
  {
    std::lock_guard lock(mu_);
    if (pins_.count({ns, put})) return false;
    AUXSTORE_ASSIGN_OR_RETURN(bool used, HasRefsOtherThanLocked(ns, put, 0));
    if (used) return false;
    CommitBatch batch;
    AUXSTORE_ASSIGN_OR_RETURN(bool added, AddReclaimLocked(ns, put, &batch));
    if (!added) return false;
    AUXSTORE_RETURN_IF_ERROR(host_.commit(&batch, "reclaim an unreferenced put"));
  }
  AUXSTORE_RETURN_IF_ERROR(host_.drop_records(ns, put));
  return true;
}

Result<std::optional<RunRecord>> RocksPageLedger::LoadRun(NamespaceId ns, PutId put) {
  const std::string key = PutKey(ns, put);
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), cf_[kRuns], key, &value);
  if (s.IsNotFound()) return std::optional<RunRecord>();
  if (!s.ok()) return FromRocks(s, "read a run record");
  AUXSTORE_ASSIGN_OR_RETURN(RunRecord r, DecodeRunRecordValue(key, Bytes(value)));
  return std::optional<RunRecord>(std::move(r));
}

Result<bool> RocksPageLedger::HasRef(NamespaceId ns, PutId owner, PutId referrer) {
  std::string value;
  rocksdb::Status g = db_->Get(HotReadOptions(), cf_[kRefs], RefKey(ns, owner, referrer), &value);
  if (g.IsNotFound()) return false;
  if (!g.ok()) return FromRocks(g, "look up a ref");
  return true;
}

Result<std::vector<SnapshotId>> RocksPageLedger::Referrers(NamespaceId ns, PutId owner) {
  std::vector<SnapshotId> out;
  const std::string begin = RefKey(ns, owner, 0), end = PutRangeEnd(ns, owner);
  rocksdb::Slice upper(end);
  rocksdb::ReadOptions ro;
  ro.iterate_upper_bound = &upper;
  std::unique_ptr<rocksdb::Iterator> it(db_->NewIterator(ro, cf_[kRefs]));
  for (it->Seek(begin); it->Valid(); it->Next()) {
    SnapshotId s;
    if (ParseSnapshotKey(it->value().ToStringView(), &s.ns, &s.prefix)) out.push_back(s);
  }
  AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "scan the refs of put " + PutHex(owner)));
  return out;
}

}  // namespace auxstore::store_internal
