// In-memory index of the visible snapshots: size, creation and last access,
// for capacity accounting, LRU eviction and TTL expiry.
//
// Loaded in the background after open (Open does no work proportional to the
// data stored); until then it only counts what this handle did. Recency is
// persisted in batches by the maintenance thread, not once per read.
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace auxstore::store_internal {

struct IndexEntry {
  uint64_t bytes = 0;
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
};

class SnapshotIndex {
 public:
  // key: SnapshotKey(ns, prefix).
  void Added(const std::string& key, const IndexEntry& e);
  void Removed(const std::string& key);
  void Touched(const std::string& key, int64_t now_ms);

  // Merges what the background loader found; keys added or removed by this
  // handle while it ran keep their newer state.
  void FinishLoad(std::unordered_map<std::string, IndexEntry> loaded);
  bool ready() const;

  uint64_t snapshots() const;
  uint64_t bytes() const;

  // Keys to evict, least recently used first, until bytes <= budget. Keys
  // with a live lease at `now_ms` are skipped.
  std::vector<std::string> EvictionVictims(uint64_t budget, int64_t now_ms) const;
  // Keys created at or before `cutoff_ms`, but for leased ones.
  std::vector<std::string> ExpiredBefore(int64_t cutoff_ms, int64_t now_ms) const;

  // Leases (in memory, this handle only): a leased key is skipped by
  // eviction and expiry until the lease is released or `expires_ms` passes.
  uint64_t AddLease(const std::string& key, int64_t now_ms, int64_t expires_ms);
  bool RemoveLease(uint64_t id);  // false when unknown or already expired
  bool Leased(const std::string& key, int64_t now_ms) const;
  size_t leases(int64_t now_ms) const;  // live ones
  // Recency changes since the last call: (key, last_access_ms).
  std::vector<std::pair<std::string, int64_t>> TakeDirtyRecency();

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, IndexEntry> entries_;
  std::unordered_set<std::string> dirty_;
  // Changes made before the load finished, which the loaded state must not undo.
  std::unordered_set<std::string> changed_during_load_;
  uint64_t bytes_ = 0;
  bool ready_ = false;
  struct Lease {
    std::string key;
    int64_t expires_ms = 0;
  };
  std::unordered_map<uint64_t, Lease> leases_;
  std::unordered_multimap<std::string, uint64_t> leases_by_key_;
  uint64_t next_lease_ = 1;
  bool LeasedLocked(const std::string& key, int64_t now_ms) const;
  void DropExpiredLocked(int64_t now_ms);
};

}  // namespace auxstore::store_internal
