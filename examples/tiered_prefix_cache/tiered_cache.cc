// TieredPrefixCache: memory LRU over the store, restore on a store hit,
// write-behind on eviction.
#include "tiered_cache.h"

#include <string>

#include "auxstore/prefix.h"

namespace tiered {

const char* TierName(Tier tier) {
  switch (tier) {
    case Tier::kMiss:
      return "miss";
    case Tier::kMemory:
      return "memory";
    case Tier::kStore:
      return "store";
  }
  return "unknown";
}

TieredPrefixCache::TieredPrefixCache(auxstore::Store& store, auxstore::GpuPipeline& pipeline,
                                     const Model& model, auxstore::NamespaceId ns,
                                     size_t memory_entries)
    : store_(store),
      pipeline_(pipeline),
      model_(model),
      ns_(ns),
      capacity_(memory_entries == 0 ? 1 : memory_entries) {}

TieredPrefixCache::~TieredPrefixCache() { (void)pipeline_.Flush(); }

auxstore::Result<LookupResult> TieredPrefixCache::Lookup(std::span<const uint32_t> tokens) {
  // Memory: the longest cached prefix.
  const std::vector<auxstore::Prefix> prefixes =
      auxstore::PrefixHashes(tokens, kBlockTokens, kSalt);
  for (size_t i = prefixes.size(); i-- > 0;) {
    auto it = index_.find(prefixes[i]);
    if (it == index_.end()) continue;
    lru_.splice(lru_.begin(), lru_, it->second);
    ++stats_.memory_hits;
    return LookupResult{Tier::kMemory, lru_.front().tokens, &lru_.front().states};
  }
  // Store: the longest stored prefix, leased so eviction cannot take it
  // before the restore; restore into fresh engine buffers, then promote.
  auxstore::LookupOptions lookup;
  lookup.lease = true;
  AUXSTORE_ASSIGN_OR_RETURN(
      auto match, store_.LongestPrefixForTokens(ns_, tokens, kBlockTokens, kSalt, lookup));
  if (!match) {
    ++stats_.misses;
    return LookupResult{};
  }
  AUXSTORE_ASSIGN_OR_RETURN(SequenceStates states, model_.FreshStates());
  auxstore::RestoreOptions restore;
  restore.lease = match->lease;  // released when the restore completes
  auto handle = pipeline_.StartRestore(ns_, match->prefix, states.targets(), restore);
  // Layer-wise: the engine's stream waits on the device for each layer as it
  // lands, so layer L's compute could start while later layers still
  // stream (here the compute is the CheckSameAsPrefill of the caller).
  for (const auto& [layer, state] : states.layers) {
    if (!handle->StreamWaitLayer(layer, model_.stream()).ok()) break;
    ++stats_.layers_streamed;
  }
  auxstore::Status restored = handle->Wait();
  if (restored.ok()) restored = model_.gpu().Synchronize(model_.stream());
  if (!restored.ok()) {
    // A corrupt snapshot is quarantined by the pipeline; either way the
    // engine recomputes, as on a miss.
    ++stats_.restore_failures;
    ++stats_.misses;
    return LookupResult{};
  }
  ++stats_.store_hits;
  AUXSTORE_RETURN_IF_ERROR(Add({match->prefix, match->tokens, std::move(states), true}));
  return LookupResult{Tier::kStore, match->tokens, &lru_.front().states};
}

auxstore::Status TieredPrefixCache::Insert(std::span<const uint32_t> tokens,
                                           SequenceStates states) {
  if (tokens.empty() || tokens.size() % kBlockTokens != 0) {
    return auxstore::Status::InvalidArgument("insert: " + std::to_string(tokens.size()) +
                                             " tokens is not a whole number of " +
                                             std::to_string(kBlockTokens) + "-token blocks");
  }
  const auxstore::Prefix prefix = auxstore::PrefixHashes(tokens, kBlockTokens, kSalt).back();
  if (index_.contains(prefix)) return auxstore::Status::Ok();  // already cached
  return Add({prefix, tokens.size(), std::move(states), false});
}

auxstore::Status TieredPrefixCache::Add(Entry entry) {
  while (lru_.size() >= capacity_) AUXSTORE_RETURN_IF_ERROR(EvictOldest());
  const auxstore::Prefix prefix = entry.prefix;
  lru_.push_front(std::move(entry));
  index_[prefix] = lru_.begin();
  return auxstore::Status::Ok();
}

auxstore::Status TieredPrefixCache::EvictOldest() {
  Entry& victim = lru_.back();
  if (!victim.in_store) {
    // Write-behind on the engine's stream: the D2H copies follow whatever
    // wrote the states there. A full write-behind queue sheds the snapshot
    // (Capacity): the engine never blocks on the store, the sequence is
    // simply not persisted.
    auxstore::Status st = pipeline_.Snapshot(ns_, victim.prefix, victim.tokens,
                                             victim.states.sources(), model_.stream());
    if (st.ok()) {
      written_behind_.push_back(victim.prefix);
      ++stats_.written_behind;
    } else if (st.code() == auxstore::StatusCode::kCapacity) {
      ++stats_.shed;
    } else {
      return st;
    }
    // The D2H copies read the buffers: they must finish before the free.
    AUXSTORE_RETURN_IF_ERROR(model_.gpu().Synchronize(model_.stream()));
  }
  AUXSTORE_RETURN_IF_ERROR(victim.states.Free());
  index_.erase(victim.prefix);
  lru_.pop_back();
  ++stats_.evictions;
  return auxstore::Status::Ok();
}

auxstore::Status TieredPrefixCache::FlushWriteBehind() { return pipeline_.Flush(); }

std::vector<auxstore::Prefix> TieredPrefixCache::TakeWrittenBehind() {
  return std::exchange(written_behind_, {});
}

}  // namespace tiered
