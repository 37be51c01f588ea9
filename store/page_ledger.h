// PageLedger: the one owner of the paged data model (format version 2,
// docs/format.md "Pages"): which put stored each page of a chain (the page
// index), what each put stored (its run record), who still uses each put
// (its refs), and which puts a put in flight is about to share (the pins).
//
// Put, reclaim, verify, compact and repair go through it; nothing else in the
// store reads or writes those entries. Pages are addressed by their own ids
// (namespace, page size, chain hash; put id and page number), never by a key
// of the home they live in: RocksPageLedger keeps them in three RocksDB
// column families (page_ledger_rocks.h); a second home (RADOS, issue 21)
// implements the same interface.
//
// The rules it keeps (the sharing invariant):
//  - a put shares a page only while it holds a pin on the page's owner, from
//    ShareChain until its commit (or failure) releases the pin;
//  - a put is reclaimed (its run record and page entries go in one commit,
//    its records after it) only when no ref and no pin holds it;
//  - the entries a put adds, and the releases a removal makes, are committed
//    in the same batch as the manifest that needs them, under the ledger's
//    lock: no reclaim slips between a check and its commit.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "auxstore/manifest_types.h"
#include "auxstore/prefix.h"
#include "auxstore/status.h"
#include "format/run_record.h"

namespace auxstore::store_internal {

// The store's commit batch (store/commit_batch.h): the manifest and the
// ledger's entries of one change are written in it atomically.
struct CommitBatch;

// One page of a chain: the chained hash at its end, under its page size.
struct PageId {
  NamespaceId ns = 0;
  uint32_t page_tokens = 0;
  Prefix chain_hash;
};

// A snapshot, as a ref names the snapshot that uses a put.
struct SnapshotId {
  NamespaceId ns = 0;
  Prefix prefix;
};

// What a put about to be written offers to share, per layer: its full pages
// [0, full_pages) and the XXH3 of each page of each array.
struct LayerPages {
  uint32_t layer = 0;
  Kind kind = Kind::kOpaque;
  uint32_t full_pages = 0;
  std::vector<uint32_t> row_bytes;                                // per array
  const std::vector<std::vector<uint64_t>>* page_xxh3 = nullptr;  // [array][page]
};

class PageLedger;

// The pages a put shares, per layer of LayerPages: the runs of earlier puts
// it reads (pages [0, own_first)) and where its own pages start. The owners
// stay pinned while this lives: nothing reclaims them before the commit.
class SharedChain {
 public:
  struct Layer {
    std::vector<PageRun> runs;
    uint32_t own_first = 0;
  };
  SharedChain() = default;
  SharedChain(PageLedger* ledger, NamespaceId ns) : ledger_(ledger), ns_(ns) {}
  SharedChain(SharedChain&& o) noexcept { *this = std::move(o); }
  SharedChain& operator=(SharedChain&& o) noexcept;
  SharedChain(const SharedChain&) = delete;
  SharedChain& operator=(const SharedChain&) = delete;
  ~SharedChain() { Release(); }

  std::vector<Layer> layers;
  // The owners read, with what each stored (bytes), all pinned.
  std::map<PutId, uint64_t> owners;

  // Drops the pins now (each owner nobody uses any more is reclaimed).
  void Release();

 private:
  PageLedger* ledger_ = nullptr;
  NamespaceId ns_ = 0;
};

// Where a put looks for pages to share: the page index (the first put that
// stored each page), nowhere (it stores every page itself), or one put only
// (compaction's re-layout, docs/format.md "Re-layout").
struct ShareFrom {
  enum class Source { kIndex, kNone, kPut } source = Source::kIndex;
  PutId put = 0;  // kPut
  static ShareFrom Index() { return {}; }
  static ShareFrom None() { return {Source::kNone, 0}; }
  static ShareFrom Put(PutId p) { return {Source::kPut, p}; }
};

// What one put adds to the ledger with its manifest.
struct PutEntries {
  SnapshotId snapshot;
  PutId put = 0;
  // What it stored; null when it stored no records (then it has no run
  // record, no ref to itself and no pages of its own).
  const RunRecord* run = nullptr;
  std::vector<PutId> owners;  // earlier puts it reads: a ref to each
};

// Writes the batch the ledger filled; called under the ledger's lock.
using CommitFn = std::function<Status(CommitBatch* batch)>;

// Entries the scans visit. `malformed`: the entry's id or value does not
// parse (then only what parsed is set).
struct RunEntry {
  bool malformed = false;
  NamespaceId ns = 0;
  PutId put = 0;
  Result<RunRecord> run{Status::Corruption("not read")};  // Corruption: it does not decode
};
struct RefEntry {
  bool malformed = false;
  NamespaceId ns = 0;
  PutId owner = 0, referrer = 0;
  SnapshotId snapshot;  // the referrer's
};
struct PageEntry {
  bool malformed = false;
  PageId id;
  PutId owner = 0;
  uint32_t page = 0;  // the chain page number it is
};
// `visit` returns false to stop. The scan returns the home's read error
// (damage it cannot read past), OK otherwise.
template <typename Entry>
using Visit = std::function<bool(const Entry&)>;

// A snapshot as repair sees it: its id and decoded manifest.
struct SnapshotManifest {
  SnapshotId id;
  const Manifest* manifest = nullptr;
};

// What the ledger needs from the store it serves.
struct LedgerHost {
  // Commits `batch` durably (the store's commit sequence, synced).
  std::function<Status(CommitBatch* batch, const std::string& what)> commit;
  // Writes `batch` as it is (no commit sequence; `sync` as asked).
  std::function<Status(CommitBatch* batch, bool sync, const std::string& what)> write;
  // Deletes the records of a reclaimed put (after the reclaim's commit).
  std::function<Status(NamespaceId ns, PutId put)> drop_records;
  // False on a read-only or fenced store: nothing is reclaimed then.
  std::function<bool()> writable;
};

class PageLedger {
 public:
  virtual ~PageLedger() = default;

  // ---- the put path
  // Resolves which earlier puts hold `page_ends` (the chained hash at the
  // end of each page 0, 1, ...) with the same bytes as `layers`, and pins
  // them. A page is shared when its owner stored that page of the same
  // layer, kind and row sizes with the same hashes; sharing of a layer stops
  // at its first page that is not. `from` says where owners are looked for.
  virtual Result<SharedChain> ShareChain(NamespaceId ns, uint32_t page_tokens,
                                         std::span<const Prefix> page_ends,
                                         std::span<const LayerPages> layers,
                                         ShareFrom from = ShareFrom::Index()) = 0;
  // Adds `put`'s run record, the page entries of its chain pages no put holds
  // yet, and its refs to `batch`, then runs `commit`, under the ledger's lock.
  virtual Status CommitPut(const PutEntries& put, CommitBatch* batch, const CommitFn& commit) = 0;
  // How many of a chain's pages, from page 0 on, are stored (the entry at
  // `page_ends[p]` names page p); stops at the first that is not.
  virtual Result<size_t> LeadingStoredPages(NamespaceId ns, uint32_t page_tokens,
                                            std::span<const Prefix> page_ends) = 0;
  // True when put id `put` is taken in `ns` (a run record has it).
  virtual Result<bool> HasRun(NamespaceId ns, PutId put) = 0;

  // ---- removal and reclaim
  // Adds to `batch` the removal of the refs of snapshot put `self` to each
  // of `used`, and the reclaim of each that no other ref and no pin holds;
  // runs `commit`, under the ledger's lock. Returns the puts reclaimed:
  // their records are the caller's to delete, after the commit.
  virtual Result<std::vector<PutId>> ReleaseSnapshot(NamespaceId ns, PutId self,
                                                     std::span<const PutId> used,
                                                     CommitBatch* batch,
                                                     const CommitFn& commit) = 0;
  // A snapshot stored again under a new put (compaction's re-layout): in one
  // commit, under the ledger's lock, what CommitPut adds for `put`, and the
  // release of the old put `old_self`'s refs to `old_used` with the reclaim
  // of each that nothing else holds (as ReleaseSnapshot). The page entries
  // of the puts reclaimed go to whichever of `put`'s own put and its owners
  // holds the same chain page, so later puts keep sharing them. Returns the
  // puts reclaimed: their records are the caller's to delete, after it.
  virtual Result<std::vector<PutId>> CommitRewrite(const PutEntries& put, PutId old_self,
                                                   std::span<const PutId> old_used,
                                                   CommitBatch* batch, const CommitFn& commit) = 0;
  // Drops one pin of `put` (SharedChain does); the last one reclaims it
  // when nobody uses it any more.
  virtual void Unpin(NamespaceId ns, PutId put) = 0;
  // Reclaims `put` if no ref and no pin holds it: true when it did.
  virtual Result<bool> ReclaimIfUnused(NamespaceId ns, PutId put) = 0;

  // ---- reads
  // nullopt when the put has no run record; Corruption when it is damaged.
  virtual Result<std::optional<RunRecord>> LoadRun(NamespaceId ns, PutId put) = 0;
  virtual Result<bool> HasRef(NamespaceId ns, PutId owner, PutId referrer) = 0;
  // The snapshots that hold a ref to `owner`.
  virtual Result<std::vector<SnapshotId>> Referrers(NamespaceId ns, PutId owner) = 0;

  // ---- scans (verify, compact, repair, the snapshot index)
  virtual Status ForEachRun(const Visit<RunEntry>& visit) = 0;
  virtual Status ForEachRef(const Visit<RefEntry>& visit) = 0;
  virtual Status ForEachPageEntry(const Visit<PageEntry>& visit) = 0;

  // ---- compact and repair
  // Removes refs that are malformed or whose snapshot no longer uses the
  // referrer's put (`live` says whether snapshot `s` is put `referrer` now;
  // an error stops). Returns how many went; `owners` gets the puts they held.
  using SnapshotIsPut = std::function<Result<bool>(const SnapshotId& s, PutId referrer)>;
  virtual Result<uint64_t> RemoveStaleRefs(const SnapshotIsPut& live,
                                           std::vector<std::pair<NamespaceId, PutId>>* owners) = 0;
  // Removes page entries that are malformed or name a put with no run
  // record (a share missed, nothing lost). Returns how many went.
  virtual Result<uint64_t> RemoveStalePageEntries() = 0;
  // Writes, where missing, what `snapshots` need: the run record of each
  // snapshot's own put (`rebuild` computes it from the records; a damaged
  // one is rebuilt too), a ref to every put it reads, and the page entries
  // of each put's chain. Problems it cannot fix go to `not_repaired`.
  using RebuildRun = std::function<Result<RunRecord>(const SnapshotManifest& s,
                                                     const std::map<uint32_t, Prefix>& chain)>;
  virtual Status RestoreDerived(std::span<const SnapshotManifest> snapshots,
                                const RebuildRun& rebuild, std::vector<std::string>* not_repaired,
                                bool* changed) = 0;
};

}  // namespace auxstore::store_internal
