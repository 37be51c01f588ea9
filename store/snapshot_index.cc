#include "store/snapshot_index.h"

#include <algorithm>

namespace auxstore::store_internal {

void SnapshotIndex::AddLocked(const std::string& key, const IndexEntry& e, uint64_t stamp) {
  auto [it, inserted] = entries_.try_emplace(key, e);
  if (!inserted) return;
  if (unreadable_.erase(key) == 0) known_.Insert(FingerprintSet::Of(key));
  it->second.stamp = stamp;
  bytes_ += e.bytes;
  for (const auto& [put, stored] : e.uses) {
    PutUse& u = puts_[put];
    if (u.users++ == 0) {
      u.bytes = stored;
      unique_bytes_ += stored;
    }
  }
}

void SnapshotIndex::EraseLocked(std::unordered_map<std::string, IndexEntry>::iterator it) {
  bytes_ -= it->second.bytes;
  for (const auto& [put, stored] : it->second.uses) {
    auto u = puts_.find(put);
    if (u == puts_.end()) continue;
    if (--u->second.users == 0) {
      unique_bytes_ -= u->second.bytes;
      puts_.erase(u);
    }
  }
  known_.Erase(FingerprintSet::Of(it->first));
  entries_.erase(it);
}

void SnapshotIndex::Added(const std::string& key, const IndexEntry& e) {
  std::lock_guard lock(mu_);
  // The put committed before it called here: a load that finished in between
  // may hold this key already, counted from a run scan that came before the
  // commit (no uses). This handle's entry is the exact one.
  auto found = entries_.find(key);
  if (found != entries_.end()) EraseLocked(found);
  AddLocked(key, e, next_stamp_++);
  if (!ready_) changed_during_load_.insert(key);
}

void SnapshotIndex::Removed(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) EraseLocked(it);
  if (unreadable_.erase(key)) known_.Erase(FingerprintSet::Of(key));
  dirty_.erase(key);
  if (!ready_) changed_during_load_.insert(key);
}

void SnapshotIndex::Relaid(const std::string& key,
                           std::vector<std::pair<std::string, uint64_t>> uses) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  IndexEntry e = it->second;
  e.uses = std::move(uses);
  const uint64_t stamp = e.stamp;
  EraseLocked(it);
  AddLocked(key, e, stamp);
  if (!ready_) changed_during_load_.insert(key);
}

void SnapshotIndex::Touched(const std::string& key, int64_t now_ms) {
  TouchedAll(std::span(&key, 1), now_ms);
}

void SnapshotIndex::TouchedAll(std::span<const std::string> keys, int64_t now_ms) {
  std::lock_guard lock(mu_);
  for (const std::string& key : keys) {
    auto it = entries_.find(key);
    if (it == entries_.end()) continue;
    it->second.last_access_ms = std::max(it->second.last_access_ms, now_ms);
    it->second.stamp = next_stamp_++;
    dirty_.insert(key);
  }
}

void SnapshotIndex::FinishLoad(std::unordered_map<std::string, IndexEntry> loaded,
                               std::unordered_set<std::string> unreadable, bool complete) {
  std::lock_guard lock(mu_);
  known_.Reserve(entries_.size() + loaded.size() + unreadable.size());
  for (auto& [key, e] : loaded) {
    if (changed_during_load_.count(key)) continue;
    AddLocked(key, e, 0);  // before anything this handle did
  }
  for (const std::string& key : unreadable) {
    if (changed_during_load_.count(key) || entries_.count(key)) continue;
    if (unreadable_.insert(key).second) known_.Insert(FingerprintSet::Of(key));
  }
  changed_during_load_.clear();
  ready_ = true;
  complete_ = complete;
}

std::optional<ptrdiff_t> SnapshotIndex::LongestKnown(std::span<const std::string> keys) const {
  std::lock_guard lock(mu_);
  if (!ready_ || !complete_) return std::nullopt;
  for (size_t i = keys.size(); i > 0; --i) {
    if (known_.Contains(FingerprintSet::Of(keys[i - 1]))) return static_cast<ptrdiff_t>(i - 1);
  }
  return -1;
}

bool SnapshotIndex::ready() const {
  std::lock_guard lock(mu_);
  return ready_;
}

uint64_t SnapshotIndex::snapshots() const {
  std::lock_guard lock(mu_);
  return entries_.size();
}

uint64_t SnapshotIndex::bytes() const {
  std::lock_guard lock(mu_);
  return bytes_;
}

uint64_t SnapshotIndex::unique_bytes() const {
  std::lock_guard lock(mu_);
  return unique_bytes_;
}

uint64_t SnapshotIndex::users(const std::string& put_key) const {
  std::lock_guard lock(mu_);
  auto it = puts_.find(put_key);
  return it == puts_.end() ? 0 : it->second.users;
}

std::pair<uint64_t, uint64_t> SnapshotIndex::sharing() const {
  std::lock_guard lock(mu_);
  uint64_t shared = 0, extra = 0;
  for (const auto& [put, u] : puts_) {
    if (u.users > 1) {
      ++shared;
      extra += u.users - 1;
    }
  }
  return {shared, extra};
}

std::vector<std::string> SnapshotIndex::EvictionVictims(uint64_t budget, int64_t now_ms) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  if (unique_bytes_ <= budget) return out;
  struct Rank {
    int64_t access;
    uint64_t stamp;
    const std::string* key;
  };
  std::vector<Rank> order;
  order.reserve(entries_.size());
  for (const auto& [key, e] : entries_) order.push_back({e.last_access_ms, e.stamp, &key});
  std::sort(order.begin(), order.end(), [](const Rank& a, const Rank& b) {
    if (a.access != b.access) return a.access < b.access;
    if (a.stamp != b.stamp) return a.stamp < b.stamp;
    return *a.key < *b.key;
  });
  // Simulates the removals: a put's bytes come off with its last user.
  uint64_t remaining = unique_bytes_;
  std::unordered_map<std::string, uint64_t> users_left;
  for (const Rank& r : order) {
    const std::string* key = r.key;
    if (remaining <= budget) break;
    if (LeasedLocked(*key, now_ms)) continue;
    out.push_back(*key);
    for (const auto& [put, stored] : entries_.at(*key).uses) {
      auto u = puts_.find(put);
      if (u == puts_.end()) continue;
      auto [left, fresh] = users_left.try_emplace(put, u->second.users);
      if (--left->second == 0) remaining -= u->second.bytes;
    }
  }
  return out;
}

std::vector<std::string> SnapshotIndex::ExpiredBefore(int64_t cutoff_ms, int64_t now_ms) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  for (const auto& [key, e] : entries_)
    if (e.created_ms <= cutoff_ms && !LeasedLocked(key, now_ms)) out.push_back(key);
  return out;
}

uint64_t SnapshotIndex::AddLease(const std::string& key, int64_t now_ms, int64_t expires_ms) {
  std::lock_guard lock(mu_);
  DropExpiredLocked(now_ms);  // expired leases go here: memory stays bounded
  const uint64_t id = next_lease_++;
  leases_[id] = {key, expires_ms};
  leases_by_key_.emplace(key, id);
  return id;
}

std::optional<std::string> SnapshotIndex::RemoveLease(uint64_t id, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) return std::nullopt;
  std::optional<std::string> key;
  if (it->second.expires_ms > now_ms) key = it->second.key;
  auto [b, e] = leases_by_key_.equal_range(it->second.key);
  for (auto k = b; k != e; ++k) {
    if (k->second == id) {
      leases_by_key_.erase(k);
      break;
    }
  }
  leases_.erase(it);
  return key;
}

bool SnapshotIndex::Leased(const std::string& key, int64_t now_ms) const {
  std::lock_guard lock(mu_);
  return LeasedLocked(key, now_ms);
}

size_t SnapshotIndex::leases(int64_t now_ms) const {
  std::lock_guard lock(mu_);
  size_t n = 0;
  for (const auto& [id, l] : leases_) n += l.expires_ms > now_ms;
  return n;
}

bool SnapshotIndex::LeasedLocked(const std::string& key, int64_t now_ms) const {
  auto [b, e] = leases_by_key_.equal_range(key);
  for (auto k = b; k != e; ++k) {
    auto l = leases_.find(k->second);
    if (l != leases_.end() && l->second.expires_ms > now_ms) return true;
  }
  return false;
}

void SnapshotIndex::DropExpiredLocked(int64_t now_ms) {
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.expires_ms > now_ms) {
      ++it;
      continue;
    }
    auto [b, e] = leases_by_key_.equal_range(it->second.key);
    for (auto k = b; k != e; ++k) {
      if (k->second == it->first) {
        leases_by_key_.erase(k);
        break;
      }
    }
    it = leases_.erase(it);
  }
}

std::vector<std::pair<std::string, int64_t>> SnapshotIndex::TakeDirtyRecency() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(dirty_.size());
  for (const auto& key : dirty_) {
    auto it = entries_.find(key);
    if (it != entries_.end()) out.emplace_back(key, it->second.last_access_ms);
  }
  dirty_.clear();
  return out;
}

}  // namespace auxstore::store_internal
