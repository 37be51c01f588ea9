// In-memory index of the visible snapshots: size, creation, last access and
// the puts whose stored bytes each one uses, for capacity accounting (unique
// bytes: a put's records count once, however many snapshots use them), LRU
// eviction and TTL expiry.
//
// Loaded in the background after open (Open does no work proportional to the
// data stored); until then it only counts what this handle did. Recency is
// persisted in batches by the maintenance thread, not once per read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "store/fingerprint_set.h"

namespace auxstore::store_internal {

struct IndexEntry {
  uint64_t bytes = 0;  // logical: the snapshot's layer bytes
  int64_t created_ms = 0;
  int64_t last_access_ms = 0;
  // (PutKey, bytes stored by that put) for every put whose records the
  // snapshot reads: its own and the owners of the pages it shares.
  std::vector<std::pair<std::string, uint64_t>> uses;
  // Set by the index: the order of this handle's puts and touches (0 for
  // what the loader found, which came before them). Eviction orders by
  // (last_access_ms, stamp, key), so puts and reads within one clock tick
  // keep their order whatever the clock's resolution.
  uint64_t stamp = 0;
};

class SnapshotIndex {
 public:
  // key: SnapshotKey(ns, prefix).
  void Added(const std::string& key, const IndexEntry& e);
  void Removed(const std::string& key);
  // The snapshot `key` stored again under other puts (compaction's
  // re-layout): what it reads changes, its recency and bytes do not.
  void Relaid(const std::string& key, std::vector<std::pair<std::string, uint64_t>> uses);
  void Touched(const std::string& key, int64_t now_ms);
  // Touched for each key under one lock (a batched read's snapshots: its
  // pool threads would otherwise take turns on the lock once a snapshot).
  void TouchedAll(std::span<const std::string> keys, int64_t now_ms);

  // Merges what the background loader found; keys added or removed by this
  // handle while it ran keep their newer state. `unreadable`: manifests the
  // loader could not decode (not snapshots, but a lookup must still read them
  // to quarantine them). `complete`: the loader read every manifest, so the
  // index can answer lookups (LongestKnown).
  void FinishLoad(std::unordered_map<std::string, IndexEntry> loaded,
                  std::unordered_set<std::string> unreadable = {}, bool complete = true);
  bool ready() const;

  // Lookups (issue 25): of `keys` (SnapshotKeys, shortest prefix first), the
  // position of the last one whose manifest is stored as far as this index
  // knows, -1 when none is; nullopt when the index cannot say (still loading,
  // or the load did not read every manifest): the caller asks RocksDB. A key
  // known here may be gone from RocksDB by the time it is read (an erase
  // commits before it leaves the index); one absent here is not visible yet
  // (a put commits before it enters it).
  std::optional<ptrdiff_t> LongestKnown(std::span<const std::string> keys) const;

  uint64_t snapshots() const;
  uint64_t bytes() const;         // logical
  uint64_t unique_bytes() const;  // each put's records once: the budget's measure
  // How many visible snapshots use the records of put `put_key`.
  uint64_t users(const std::string& put_key) const;
  // Puts used by more than one snapshot, and the references beyond the first.
  std::pair<uint64_t, uint64_t> sharing() const;

  // Keys to evict, least recently used first, until unique_bytes <= budget
  // (a put's bytes free only with the last snapshot using it). Keys with a
  // live lease at `now_ms` are skipped.
  std::vector<std::string> EvictionVictims(uint64_t budget, int64_t now_ms) const;
  // Keys created at or before `cutoff_ms`, but for leased ones.
  std::vector<std::string> ExpiredBefore(int64_t cutoff_ms, int64_t now_ms) const;

  // Leases (in memory, this handle only): a leased key is skipped by
  // eviction and expiry until the lease is released or `expires_ms` passes.
  uint64_t AddLease(const std::string& key, int64_t now_ms, int64_t expires_ms);
  // The leased key, or nullopt when the lease is unknown or already expired
  // (an expired one is dropped too).
  std::optional<std::string> RemoveLease(uint64_t id, int64_t now_ms);
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
  struct PutUse {
    uint64_t bytes = 0;
    uint64_t users = 0;
  };
  std::unordered_map<std::string, PutUse> puts_;
  uint64_t unique_bytes_ = 0;
  uint64_t next_stamp_ = 1;
  bool ready_ = false;
  bool complete_ = false;                       // lookups may trust the index
  std::unordered_set<std::string> unreadable_;  // damaged manifests found by the load
  // One fingerprint per key of entries_ and of unreadable_ (disjoint): what
  // LongestKnown probes.
  FingerprintSet known_;
  void AddLocked(const std::string& key, const IndexEntry& e, uint64_t stamp);
  void EraseLocked(std::unordered_map<std::string, IndexEntry>::iterator it);
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
