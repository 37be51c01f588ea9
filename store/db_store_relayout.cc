// Compaction's re-layout (CompactOptions::relayout; docs/format.md
// "Re-layout"): a chain's pages laid out in the order its longest snapshot
// reads them, so that a paged restore is one sequential read again.
//
// Paged puts store only the pages no earlier put of the chain stored, so the
// longest snapshot of a chain of n turns reads each layer from n owners'
// streams, one short range in each (issue 25: chain (a)'s cold restore at
// 0.69-0.85 of the same snapshot stored whole). Only linear families are
// laid out (every snapshot's pages a prefix of the longest's: then the
// pages end in one stream holding each once; branches would need copies).
// Longest first:
//  - a snapshot whose pages a base of its chain holds (a put holding the
//    chain from page 0 in one stream) is moved to read them all there: its
//    own new put keeps only its tail rows;
//  - else one reading its pages from two or more puts, in runs shorter
//    than 1 MiB on average, is stored again, sharing what a base (or the
//    put of its page 0) holding at least half of its pages has, or nothing
//    (then it is the base of its chain: all its pages in one stream);
//  - else (its pages in its own stream, one put's then its own, or long
//    runs that the reader reads ahead in parallel) it is left as it is.
// So a linear chain ends as one stream of all its pages, read by every
// snapshot of it, each with its tail, and nothing else; every put it read
// before is reclaimed.
//
// Each move is one synced commit (PageLedger::CommitRewrite): the new
// manifest (same layers, same layer digests: the bytes were read back and
// verified) with its run record, refs and page entries, and the release of
// the old put's refs with the reclaim of every put nobody reads any more;
// their records go after the commit, as an erase's do. A crash at any point
// leaves every snapshot whole, in its old layout or its new one, and at
// worst records `compact` removes as orphans.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "format/envelope.h"
#include "format/manifest.h"
#include "store/bytes.h"
#include "store/db_store.h"
#include "store/keys.h"
#include "store/put_plan.h"

namespace auxstore::store_internal {

namespace {

// The pages of a snapshot as its owners' run records say: the chained
// hash at the end of each page, and per layer its kind, row sizes and page
// XXH3s ([array][page]). nullopt when a run record cannot say.
struct SnapshotPages {
  std::vector<Prefix> ends;
  struct Layer {
    Kind kind;
    std::vector<uint32_t> row_bytes;
    std::vector<std::vector<uint64_t>> xxh3;
  };
  std::map<uint32_t, Layer> layers;

  // Whether `longer` holds every page of this one: the same chain, and
  // each layer's pages with the same bytes.
  bool PrefixOf(const SnapshotPages& longer) const {
    if (ends.size() > longer.ends.size() ||
        !std::equal(ends.begin(), ends.end(), longer.ends.begin())) {
      return false;
    }
    for (const auto& [layer, l] : layers) {
      auto it = longer.layers.find(layer);
      if (it == longer.layers.end() || it->second.kind != l.kind ||
          it->second.row_bytes != l.row_bytes) {
        return false;
      }
      for (size_t a = 0; a < l.xxh3.size(); ++a) {
        const auto& mine = l.xxh3[a];
        const auto& theirs = it->second.xxh3[a];
        if (mine.size() > theirs.size() || !std::equal(mine.begin(), mine.end(), theirs.begin())) {
          return false;
        }
      }
    }
    return true;
  }
};

// The pages `run` holds when it holds a chain from page 0 in one stream
// (every layer from page 0), else nullopt.
std::optional<SnapshotPages> PagesOfBase(const RunRecord& run) {
  if (run.chain_first_page != 0 || run.chain.empty()) return std::nullopt;
  SnapshotPages out;
  out.ends = run.chain;
  for (const RunLayer& rl : run.layers) {
    if (rl.pages == 0) continue;
    if (rl.first_page != 0) return std::nullopt;
    SnapshotPages::Layer& pl = out.layers[rl.layer];
    pl.kind = rl.kind;
    for (const RunArray& a : rl.arrays) {
      pl.row_bytes.push_back(a.row_bytes);
      pl.xxh3.push_back(a.page_xxh3);
    }
  }
  return out;
}

// Run records by put, loaded once each; the first read error is kept (a
// record that does not decode reads as absent).
class RunCache {
 public:
  RunCache(PageLedger* ledger, NamespaceId ns) : ledger_(ledger), ns_(ns) {}
  const RunRecord* Get(PutId put) {
    auto it = runs_.find(put);
    if (it == runs_.end()) {
      auto loaded = ledger_->LoadRun(ns_, put);
      if (!loaded.ok() && !loaded.error().IsCorruption() && error_.ok()) error_ = loaded.error();
      it = runs_.emplace(put, loaded.ok() ? std::move(*loaded) : std::nullopt).first;
    }
    return it->second ? &*it->second : nullptr;
  }
  const Status& error() const { return error_; }

 private:
  PageLedger* ledger_;
  NamespaceId ns_;
  std::map<PutId, std::optional<RunRecord>> runs_;
  Status error_;
};

// The largest number of full pages any layer of `m` has.
uint32_t PagesOf(const Manifest& m) {
  uint32_t pages = 0;
  for (const LayerEntry& l : m.layers) pages = std::max(pages, l.full_pages());
  return pages;
}

// The puts other than its own that `m`'s pages come from.
std::set<PutId> OtherOwners(const Manifest& m) {
  std::set<PutId> owners;
  for (const LayerEntry& l : m.layers) {
    for (const PageRun& r : l.runs) {
      if (r.owner != m.put_id) owners.insert(r.owner);
    }
  }
  return owners;
}

// A restore of `m` reads each run of a layer from its owner's records of
// that layer (its arrays are neighbours in key order). Runs of 1 MiB and
// more are read in pieces that each get an iterator of their own and are
// read ahead (the layer reader's kOwnIteratorBytes), so several owners read
// about as fast as one (chain bench (b), 2.1 MB a run: paged 1.09-1.17 x
// whole, laid out 0.79-0.87); short runs cost a seek each (chain (a),
// 131 KB a run: 0.81-0.89 -> 1.0).
constexpr uint64_t kLongRunBytes = uint64_t{1} << 20;

bool ReadsShortRuns(const Manifest& m) {
  uint64_t bytes = 0, runs = 0;
  for (const LayerEntry& l : m.layers) {
    for (const PageRun& r : l.runs) {
      for (uint32_t row_bytes : l.row_bytes) bytes += uint64_t{r.pages} * m.page_tokens * row_bytes;
      ++runs;
    }
  }
  return runs > 0 && bytes / runs < kLongRunBytes;
}

bool SameLayers(const Manifest& a, const Manifest& b) {
  if (a.layers.size() != b.layers.size() || a.token_count != b.token_count) return false;
  for (size_t i = 0; i < a.layers.size(); ++i) {
    const LayerEntry &x = a.layers[i], &y = b.layers[i];
    if (x.layer != y.layer || x.kind != y.kind || x.bytes != y.bytes || x.xxh3 != y.xxh3 ||
        x.header != y.header || x.rows != y.rows || x.row_bytes != y.row_bytes) {
      return false;
    }
  }
  return true;
}

std::optional<SnapshotPages> PagesFromRuns(const Manifest& m, RunCache* runs) {
  SnapshotPages out;
  out.ends.resize(PagesOf(m));
  std::vector<bool> known(out.ends.size(), false);
  for (const LayerEntry& l : m.layers) {
    if (l.runs.empty()) continue;
    SnapshotPages::Layer& pl = out.layers[l.layer];
    pl.kind = l.kind;
    pl.row_bytes = l.row_bytes;
    pl.xxh3.assign(l.row_bytes.size(), {});
    for (const PageRun& r : l.runs) {
      const RunRecord* run = runs->Get(r.owner);
      const RunLayer* rl = run ? run->FindLayer(l.layer) : nullptr;
      if (rl == nullptr || run->page_tokens != m.page_tokens ||
          rl->arrays.size() != l.row_bytes.size()) {
        return std::nullopt;
      }
      for (uint32_t p = r.first_page; p < r.first_page + r.pages; ++p) {
        if (p < rl->first_page || p >= rl->first_page + rl->pages || p < run->chain_first_page ||
            p - run->chain_first_page >= run->chain.size()) {
          return std::nullopt;
        }
        const Prefix& end = run->chain[p - run->chain_first_page];
        if (known[p] && !(out.ends[p] == end)) return std::nullopt;
        out.ends[p] = end;
        known[p] = true;
        for (size_t a = 0; a < rl->arrays.size(); ++a) {
          pl.xxh3[a].push_back(rl->arrays[a].page_xxh3[p - rl->first_page]);
        }
      }
    }
  }
  if (std::find(known.begin(), known.end(), false) != known.end()) return std::nullopt;
  return out;
}

}  // namespace

// The bases laid out so far: puts that hold a whole chain from page 0 in one
// stream, by (namespace, page size, chained hash at the end of page 0).
struct DbStore::RelayoutBases {
  std::map<std::tuple<NamespaceId, uint32_t, Prefix>, std::vector<std::pair<PutId, SnapshotPages>>>
      by_first_page;

  void Add(NamespaceId ns, const RunRecord& run, PutId put) {
    auto pages = PagesOfBase(run);
    if (pages)
      by_first_page[{ns, run.page_tokens, run.chain[0]}].emplace_back(put, std::move(*pages));
  }
};

Status DbStore::RelayoutChains(CompactReport* report) {
  // The paged snapshots, grouped by the puts they read: snapshots that read
  // a common put (transitively) are one chain family.
  struct Entry {
    std::string key;
    NamespaceId ns = 0;
    uint32_t pages = 0;
    Manifest manifest;
  };
  std::vector<Entry> entries;
  std::map<std::pair<NamespaceId, PutId>, std::pair<NamespaceId, PutId>> parent;
  auto find = [&](std::pair<NamespaceId, PutId> x) {
    while (parent.count(x) && parent[x] != x) x = parent[x] = parent[parent[x]];
    return x;
  };
  {
    std::unique_ptr<rocksdb::Iterator> it(
        db_->NewIterator(rocksdb::ReadOptions(), cf_[kManifests]));
    for (it->SeekToFirst(); it->Valid(); it->Next()) {
      Entry e;
      Prefix prefix;
      if (!ParseSnapshotKey(it->key().ToStringView(), &e.ns, &prefix)) continue;
      auto m = DecodeManifestRecord(it->key().ToString(), Bytes(it->value()));
      if (!m.ok() || m->page_tokens == 0) continue;  // a damaged one is verify's
      e.pages = PagesOf(*m);
      if (e.pages == 0) continue;
      e.key = it->key().ToString();
      e.manifest = std::move(*m);
      const auto self = std::make_pair(e.ns, e.manifest.put_id);
      if (!parent.count(self)) parent[self] = self;
      for (const LayerEntry& l : e.manifest.layers) {
        for (const PageRun& r : l.runs) {
          const auto o = std::make_pair(e.ns, r.owner);
          if (!parent.count(o)) parent[o] = o;
          parent[find(o)] = find(self);
        }
      }
      entries.push_back(std::move(e));
    }
    AUXSTORE_RETURN_IF_ERROR(FromRocks(it->status(), "list snapshots to lay out"));
  }
  std::map<std::pair<NamespaceId, PutId>, std::vector<const Entry*>> families;
  for (const Entry& e : entries) families[find({e.ns, e.manifest.put_id})].push_back(&e);

  // Only linear families are laid out: every snapshot's pages a prefix of
  // its longest one's. Their pages then end in one stream that holds each
  // page once, as before, so the store never grows; a family with branches
  // would need a copy of each branch's pages per turn (a base must start at
  // page 0), and is left as it is.
  std::vector<std::pair<uint32_t, std::string>> todo;
  for (auto& [root, members] : families) {
    std::stable_sort(members.begin(), members.end(),
                     [](const Entry* a, const Entry* b) { return a->pages > b->pages; });
    RunCache runs(&ledger_, root.first);
    const auto longest = PagesFromRuns(members.front()->manifest, &runs);
    bool linear = longest.has_value();
    for (size_t i = 1; linear && i < members.size(); ++i) {
      const auto pages = PagesFromRuns(members[i]->manifest, &runs);
      linear = pages && pages->PrefixOf(*longest);
    }
    AUXSTORE_RETURN_IF_ERROR(runs.error());
    if (!linear) continue;
    for (const Entry* e : members) todo.emplace_back(e->pages, e->key);
  }
  std::stable_sort(todo.begin(), todo.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  RelayoutBases bases;
  for (const auto& [pages, key] : todo) {
    AUXSTORE_RETURN_IF_ERROR(RelayoutSnapshot(key, &bases, report));
  }
  return Status::Ok();
}

// One snapshot: left as it is (a base when it holds all its pages), or
// stored again. Errors that concern only this snapshot (gone, leased,
// changed meanwhile, damaged) count as skipped; others stop the compaction.
Status DbStore::RelayoutSnapshot(const std::string& skey, RelayoutBases* bases,
                                 CompactReport* report) {
  NamespaceId ns = 0;
  Prefix prefix;
  if (!ParseSnapshotKey(skey, &ns, &prefix)) return Status::Ok();
  auto skip = [&] {
    ++report->relayout_skipped;
    return Status::Ok();
  };
  std::string seen_value;
  {
    rocksdb::Status g = db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &seen_value);
    if (g.IsNotFound()) return Status::Ok();  // erased since the listing
    if (!g.ok()) return FromRocks(g, "look up prefix " + prefix.ToHex());
  }
  auto decoded = DecodeManifestRecord(skey, Bytes(seen_value));
  if (!decoded.ok()) return Status::Ok();
  const auto old = std::make_shared<const Manifest>(std::move(*decoded));
  const std::set<PutId> others = OtherOwners(*old);

  // Its pages as the run records of the puts that stored them say (a put
  // stores the chain hashes of the pages it stored). A run record rebuilt
  // without its chain (docs/durability.md, "Repair") cannot say: the
  // snapshot is left as it is.
  const uint32_t page_tokens = old->page_tokens;
  RunCache runs(&ledger_, ns);
  std::optional<SnapshotPages> pages = PagesFromRuns(*old, &runs);
  AUXSTORE_RETURN_IF_ERROR(runs.error());
  if (!pages) return skip();

  // A base of its chain laid out already that holds all its pages: it
  // should read them there (and keep only its tail).
  std::vector<PutId> candidates;
  PutId covering = 0;
  if (auto found = bases->by_first_page.find({ns, page_tokens, pages->ends[0]});
      found != bases->by_first_page.end()) {
    for (const auto& [base, base_pages] : found->second) {
      candidates.push_back(base);
      if (covering == 0 && pages->PrefixOf(base_pages)) covering = base;
    }
  }
  if (covering != 0) {
    const bool there =
        others == std::set<PutId>{covering} &&
        std::all_of(old->layers.begin(), old->layers.end(), [&](const LayerEntry& l) {
          return std::all_of(l.runs.begin(), l.runs.end(),
                             [&](const PageRun& r) { return r.owner == covering; });
        });
    if (there) return Status::Ok();
  } else if (others.empty()) {  // every page in its own stream: a base
    if (const RunRecord* own = runs.Get(old->put_id)) bases->Add(ns, *own, old->put_id);
    return Status::Ok();
  } else if (others.size() == 1) {
    return Status::Ok();  // one stream of pages, then its own: two ranges a layer
  } else if (!ReadsShortRuns(*old)) {
    return Status::Ok();  // long runs: read ahead about as fast as one
  }
  if (index_.Leased(skey, NowUnixMs())) return skip();

  // Its bytes, read back and verified (a damaged one is quarantined by the
  // read, as any read's; nothing is touched: no hit, no recency).
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<LayerBlob> layers;
  blobs.reserve(old->layers.size());
  for (const LayerEntry& l : old->layers) {
    blobs.emplace_back(l.bytes);
    auto read =
        CopyLayerInto(ns, prefix, old, l.layer, blobs.back(), NewPieceReader(ns, ReadMode{}));
    if (!read.ok()) {
      if (read.error().IsNotFound() || read.error().IsCorruption()) return skip();
      return read.error();
    }
    layers.push_back({l.layer, l.kind, blobs.back()});
  }

  // The new put, planned as PutSnapshot plans one, from the page hashes above.
  AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, NamespaceSpecFor(ns));
  PutOptions put;
  put.created_unix_ms = old->created_unix_ms;
  put.token_digest = old->token_digest;
  PutPlan plan;
  plan.ns = ns;
  plan.prefix = prefix;
  plan.options = &put;
  AUXSTORE_RETURN_IF_ERROR(PlanLayers(spec, old->token_count, layers, &plan));
  plan.chained = true;
  plan.page_tokens = page_tokens;
  plan.page_ends = std::move(pages->ends);
  HashPages(&plan);
  // Else the base that holds most of its pages, if one holds at least half:
  // a base laid out before (a chain that grew since reads it and writes
  // only its new pages, not the whole chain again at every compaction), or
  // the put holding its page 0 when that one holds a stream from page 0.
  PutId best = covering;
  if (best == 0) {
    const PutId first = old->layers.empty() || old->layers[0].runs.empty()
                            ? old->put_id
                            : old->layers[0].runs[0].owner;
    const RunRecord* first_run = runs.Get(first);
    if (first != old->put_id && first_run != nullptr && PagesOfBase(*first_run) &&
        std::find(candidates.begin(), candidates.end(), first) == candidates.end()) {
      candidates.push_back(first);
    }
    uint64_t total = 0;
    for (const PutPlan::Layer& l : plan.layers) total += l.full_pages;
    uint64_t best_pages = 0;
    for (PutId base : candidates) {
      plan.share_from = ShareFrom::Put(base);
      AUXSTORE_RETURN_IF_ERROR(SharePages(&plan));
      uint64_t shared = 0;
      for (const PutPlan::Layer& l : plan.layers) shared += l.own_first;
      if (shared > best_pages && 2 * shared >= total) best_pages = shared, best = base;
    }
  }
  plan.share_from = best != 0 ? ShareFrom::Put(best) : ShareFrom::None();
  AUXSTORE_RETURN_IF_ERROR(SharePages(&plan));
  AUXSTORE_RETURN_IF_ERROR(AssemblePut(old->token_count, &plan));
  if (!SameLayers(*old, plan.manifest)) {
    // The same bytes must give the same layers: anything else is a bug; the
    // snapshot stays as it was, and the compaction goes on.
    Log(LogLevel::kError, "re-layout of prefix " + prefix.ToHex() + " in namespace " +
                              NamespaceHex(ns) +
                              " computed other layer digests than its manifest's; left as it is");
    return skip();
  }

  // The move: one commit, under the key's lock, if nothing changed it.
  KeyLock key_lock(this, skey);
  std::string now_value;
  if (!db_->Get(rocksdb::ReadOptions(), cf_[kManifests], skey, &now_value).ok() ||
      now_value != seen_value || index_.Leased(skey, NowUnixMs())) {
    return skip();
  }
  CommitBatch batch;
  AUXSTORE_RETURN_IF_ERROR(StageRecords(skey, &plan, &batch));
  const std::vector<PutId> old_used = UsedPuts(*old);
  AUXSTORE_ASSIGN_OR_RETURN(
      std::vector<PutId> garbage,
      ledger_.CommitRewrite(
          EntriesOf(plan), old->put_id, old_used, &batch, [&](CommitBatch* b) -> Status {
            const std::string value = EncodeEnvelope(Bytes(skey), RecordKind::kManifest,
                                                     Bytes(EncodeManifest(plan.manifest)));
            AUXSTORE_RETURN_IF_ERROR(
                FromRocks(b->rocks.Put(cf_[kManifests], skey, value), "batch"));
            // Synced whatever the store's durability: it
            // replaces a snapshot already acknowledged.
            return Commit(&b->rocks, /*sync=*/true, "lay out the pages of " + prefix.ToHex());
          }));
  std::vector<std::pair<std::string, uint64_t>> uses;
  for (const auto& [o, bytes] : plan.shared.owners) uses.emplace_back(PutKey(ns, o), bytes);
  if (!plan.streams.empty()) uses.emplace_back(PutKey(ns, plan.put_id), plan.run.stored_bytes());
  index_.Relaid(skey, std::move(uses));
  ++report->relaid_snapshots;
  report->relaid_bytes += plan.own_bytes;
  if (plan.shared.owners.empty()) bases->Add(ns, plan.run, plan.put_id);
  plan.shared.Release();
  for (PutId o : garbage) AUXSTORE_RETURN_IF_ERROR(DeleteRecordsOfPut(ns, o));
  return Status::Ok();
}

}  // namespace auxstore::store_internal
