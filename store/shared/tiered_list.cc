// TieredStore::List: the local directory's snapshots and the pool's, merged
// in key order, each snapshot once (the local copy where both hold it).
#include <algorithm>

#include "store/keys.h"
#include "store/shared/tiered_store.h"

namespace auxstore::shared {

using store_internal::SnapshotKey;

Status TieredStore::List(std::optional<NamespaceId> ns,
                         const std::function<bool(const SnapshotInfo&)>& visit) {
  // The pool's records in one listing first; unreachable: the local ones are
  // still visited, and the call says the pool's are missing.
  auto listed = tier_->ListRecords(ns);
  std::vector<std::pair<std::string, SnapshotInfo>> pooled;
  if (listed.ok()) {
    for (SharedRecord& r : listed->records) {
      pooled.push_back({SnapshotKey(r.ns, r.prefix), {r.ns, r.prefix, std::move(r.manifest)}});
    }
    std::sort(pooled.begin(), pooled.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }
  size_t next = 0;
  bool stopped = false;
  // The pool's snapshots ordered before `key` (all of them: the end).
  auto visit_pooled_before = [&](const std::string* key) {
    for (; !stopped && next < pooled.size() && (!key || pooled[next].first < *key); ++next)
      stopped = !visit(pooled[next].second);
  };
  Status local = Local().List(ns, [&](const SnapshotInfo& s) {
    const std::string key = SnapshotKey(s.ns, s.prefix);
    visit_pooled_before(&key);
    if (stopped) return false;
    if (next < pooled.size() && pooled[next].first == key) ++next;  // the local copy answers
    stopped = !visit(s);
    return !stopped;
  });
  if (!local.ok()) return local;
  visit_pooled_before(nullptr);
  if (!listed.ok() && !stopped)
    return listed.status().WithContext("the pool's snapshots not listed");
  return Status::Ok();
}

}  // namespace auxstore::shared
