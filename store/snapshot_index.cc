#include "store/snapshot_index.h"

#include <algorithm>

namespace auxstore::store_internal {

void SnapshotIndex::Added(const std::string& key, const IndexEntry& e) {
  std::lock_guard lock(mu_);
  auto [it, inserted] = entries_.try_emplace(key, e);
  if (inserted) bytes_ += e.bytes;
  if (!ready_) changed_during_load_.insert(key);
}

void SnapshotIndex::Removed(const std::string& key) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  dirty_.erase(key);
  if (!ready_) changed_during_load_.insert(key);
}

void SnapshotIndex::Touched(const std::string& key, int64_t now_ms) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return;
  it->second.last_access_ms = std::max(it->second.last_access_ms, now_ms);
  dirty_.insert(key);
}

void SnapshotIndex::FinishLoad(std::unordered_map<std::string, IndexEntry> loaded) {
  std::lock_guard lock(mu_);
  for (auto& [key, e] : loaded) {
    if (changed_during_load_.count(key)) continue;
    auto [it, inserted] = entries_.try_emplace(key, e);
    if (inserted) bytes_ += e.bytes;
  }
  changed_during_load_.clear();
  ready_ = true;
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

std::vector<std::string> SnapshotIndex::EvictionVictims(uint64_t budget, int64_t now_ms) const {
  std::lock_guard lock(mu_);
  std::vector<std::string> out;
  if (bytes_ <= budget) return out;
  std::vector<std::pair<int64_t, const std::string*>> order;
  order.reserve(entries_.size());
  for (const auto& [key, e] : entries_) order.emplace_back(e.last_access_ms, &key);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  uint64_t remaining = bytes_;
  for (const auto& [access, key] : order) {
    if (remaining <= budget) break;
    if (LeasedLocked(*key, now_ms)) continue;
    out.push_back(*key);
    remaining -= entries_.at(*key).bytes;
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

bool SnapshotIndex::RemoveLease(uint64_t id) {
  std::lock_guard lock(mu_);
  auto it = leases_.find(id);
  if (it == leases_.end()) return false;
  auto [b, e] = leases_by_key_.equal_range(it->second.key);
  for (auto k = b; k != e; ++k) {
    if (k->second == id) {
      leases_by_key_.erase(k);
      break;
    }
  }
  leases_.erase(it);
  return true;
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
