// TieredStore's verify, repair and compact: the local store's as before,
// then the pool's (RadosPoolCheck). The pool's findings join the local
// report: each manifest that is not ok, each damaged page, is a store
// problem (so the report is not clean); each pool manifest repair removed is
// a removed snapshot named "RADOS pool".
#include <algorithm>

#include "store/shared/tiered_store.h"

namespace auxstore::shared {
namespace {

// Compact reclaims pool pages no manifest names once they are this old at
// least (and never less than three op timeouts, RadosReclaim's floor): a
// writer's pages wait for its commit well within it.
constexpr std::chrono::seconds kPoolGrace{60};

}  // namespace

Result<VerifyReport> TieredStore::Verify(const VerifyOptions& options) {
  AUXSTORE_ASSIGN_OR_RETURN(VerifyReport report, Local().Verify(options));
  AUXSTORE_ASSIGN_OR_RETURN(auto pool, tier_->VerifyPool());
  const std::string where = "RADOS pool '" + tier_->pool() + "': ";
  for (const auto& m : pool.manifests) {
    if (m.health == rados::ManifestHealth::kOk) continue;
    report.store_problems.push_back(where + m.object + " " +
                                    std::string(rados::ManifestHealthName(m.health)) + ": " +
                                    m.reason);
  }
  for (const auto& p : pool.damaged_pages) {
    report.store_problems.push_back(where + p.key.ObjectName() + ": " + p.reason);
  }
  return report;
}

Result<RepairReport> TieredStore::Repair(const VerifyReport& report) {
  // The pool's problems in `report` are the pool's to repair, not the local store's.
  VerifyReport local_report = report;
  std::erase_if(local_report.store_problems,
                [](const std::string& p) { return p.starts_with("RADOS pool '"); });
  AUXSTORE_ASSIGN_OR_RETURN(RepairReport out, Local().Repair(local_report));
  AUXSTORE_ASSIGN_OR_RETURN(auto pool, tier_->RepairPool());
  for (const auto& object : pool.removed_manifests) {
    CorruptSnapshot c;
    if (auto key = ParseSharedObject(object)) std::tie(c.ns, c.prefix) = *key;
    c.why = "RADOS pool '" + tier_->pool() + "': " + object + " removed";
    out.removed.push_back(std::move(c));
  }
  for (const auto& object : pool.changed_since_verify) {
    out.not_repaired.push_back("RADOS pool '" + tier_->pool() + "': " + object +
                               " changed since verify; verify again");
  }
  return out;
}

Result<CompactReport> TieredStore::Compact(const CompactOptions& options) {
  AUXSTORE_ASSIGN_OR_RETURN(CompactReport report, Local().Compact(options));
  const auto floor = std::chrono::duration_cast<std::chrono::seconds>(3 * tier_->op_timeout());
  AUXSTORE_ASSIGN_OR_RETURN(auto pool, tier_->CompactPool(std::max(kPoolGrace, floor)));
  (void)pool;  // CompactReport has no pool fields: the pool's figures are its own report's
  return report;
}

}  // namespace auxstore::shared
