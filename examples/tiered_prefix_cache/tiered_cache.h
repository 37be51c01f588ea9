// TieredPrefixCache: the in-memory LRU prefix cache an engine keeps (here:
// sequence states on the backend), with an auxstore Store as its persistent
// lower tier.
//
// Lookup: the memory tier first (longest cached prefix of the tokens), then
// the store (LongestPrefixForTokens, leasing the hit so eviction cannot take
// it before the restore); a store hit is restored into fresh engine-owned
// buffers through the GpuPipeline, the engine's stream waiting on each layer
// as it lands, and promoted into memory. Insert adds a prefilled sequence;
// whatever the LRU evicts is written behind to the store (GpuPipeline::
// Snapshot: D2H now on the engine's stream, the write on the pipeline's
// threads), or shed when the write-behind queue is full: never a block.
//
// Thread safety: none; one engine thread drives it.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <span>
#include <vector>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"
#include "model.h"

namespace tiered {

enum class Tier { kMiss, kMemory, kStore };
const char* TierName(Tier tier);

struct LookupResult {
  Tier tier = Tier::kMiss;
  uint64_t tokens = 0;                     // tokens the hit covers
  const SequenceStates* states = nullptr;  // valid until the next Lookup/Insert
};

struct CacheStats {
  uint64_t memory_hits = 0, store_hits = 0, misses = 0;
  uint64_t evictions = 0, written_behind = 0, shed = 0, restore_failures = 0;
  uint64_t layers_streamed = 0;  // layers the engine's stream waited on one by one
};

class TieredPrefixCache {
 public:
  // `memory_entries` sequences stay in memory. The store, pipeline and model
  // must outlive the cache.
  TieredPrefixCache(auxstore::Store& store, auxstore::GpuPipeline& pipeline, const Model& model,
                    auxstore::NamespaceId ns, size_t memory_entries);
  ~TieredPrefixCache();

  auxstore::Result<LookupResult> Lookup(std::span<const uint32_t> tokens);
  // Caches the states of `tokens` (a whole number of blocks).
  auxstore::Status Insert(std::span<const uint32_t> tokens, SequenceStates states);
  // Waits until every write-behind so far is in the store.
  auxstore::Status FlushWriteBehind();
  // The prefixes written behind since the last call (after FlushWriteBehind:
  // the ones now in the store).
  std::vector<auxstore::Prefix> TakeWrittenBehind();

  const CacheStats& stats() const { return stats_; }

 private:
  struct Entry {
    auxstore::Prefix prefix;
    uint64_t tokens = 0;
    SequenceStates states;
    bool in_store = false;  // came from the store: eviction need not write it
  };
  using EntryList = std::list<Entry>;

  auxstore::Status Add(Entry entry);
  auxstore::Status EvictOldest();

  auxstore::Store& store_;
  auxstore::GpuPipeline& pipeline_;
  const Model& model_;
  auxstore::NamespaceId ns_;
  size_t capacity_;
  EntryList lru_;  // front: most recently used
  std::map<auxstore::Prefix, EntryList::iterator> index_;
  std::vector<auxstore::Prefix> written_behind_;
  CacheStats stats_;
};

}  // namespace tiered
