#include "tools/cli/pool_report.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "tools/cli/inspect.h"

namespace auxstore::cli {
namespace {

using nlohmann::json;
using Key = std::pair<NamespaceId, std::array<uint8_t, 16>>;

struct Entry {
  const SnapshotInfo* info = nullptr;
  bool local = false, pool = false;
  const char* where() const { return local && pool ? "both" : local ? "local" : "pool"; }
};

// Per namespace: snapshots and their payload bytes.
std::map<NamespaceId, std::pair<uint64_t, uint64_t>> PerNamespace(const SharedPoolListing& pool) {
  std::map<NamespaceId, std::pair<uint64_t, uint64_t>> out;
  for (const SnapshotInfo& s : pool.snapshots) {
    out[s.ns].first += 1;
    out[s.ns].second += s.manifest.payload_bytes();
  }
  return out;
}

}  // namespace

json SnapshotJson(const SnapshotInfo& s, const char* where) {
  json j = {{"namespace", NamespaceHex(s.ns)},
            {"prefix", s.prefix.ToHex()},
            {"token_count", s.manifest.token_count},
            {"layers", s.manifest.layers.size()},
            {"payload_bytes", s.manifest.payload_bytes()},
            {"shared_bytes", SharedBytes(s.manifest)},
            {"created_unix_ms", s.manifest.created_unix_ms}};
  if (where != nullptr) j["where"] = where;
  return j;
}

std::string SnapshotLine(const SnapshotInfo& s, const char* where) {
  return NamespaceHex(s.ns) + " " + s.prefix.ToHex() +
         (where != nullptr ? std::string(" where=") + where : std::string()) +
         " tokens=" + std::to_string(s.manifest.token_count) +
         " layers=" + std::to_string(s.manifest.layers.size()) +
         " bytes=" + std::to_string(s.manifest.payload_bytes()) +
         " shared=" + std::to_string(SharedBytes(s.manifest)) + "\n";
}

void PrintMergedListing(const std::vector<SnapshotInfo>& local, const SharedPoolListing& pool,
                        bool as_json, std::ostream& out) {
  std::map<Key, Entry> merged;
  for (const SnapshotInfo& s : local) {
    Entry& e = merged[{s.ns, s.prefix.bytes}];
    e.info = &s;
    e.local = true;
  }
  for (const SnapshotInfo& s : pool.snapshots) {
    Entry& e = merged[{s.ns, s.prefix.bytes}];
    if (e.info == nullptr) e.info = &s;
    e.pool = true;
  }
  json arr = json::array();
  for (const auto& [key, e] : merged) {
    if (as_json) {
      arr.push_back(SnapshotJson(*e.info, e.where()));
    } else {
      out << SnapshotLine(*e.info, e.where());
    }
  }
  if (as_json) out << arr.dump(2) << "\n";
}

json PoolStatsJson(const SharedPoolListing& pool) {
  json ns = json::array();
  for (const auto& [id, totals] : PerNamespace(pool)) {
    const auto spec = pool.namespaces.find(id);
    ns.push_back({{"id", NamespaceHex(id)},
                  {"model_id", spec == pool.namespaces.end() ? "" : spec->second.model_id},
                  {"snapshots", totals.first},
                  {"payload_bytes", totals.second}});
  }
  uint64_t payload = 0;
  for (const SnapshotInfo& s : pool.snapshots) payload += s.manifest.payload_bytes();
  return {{"snapshots", pool.snapshots.size()},
          {"payload_bytes", payload},
          {"unique_bytes", pool.unique_bytes},
          {"pages_named", pool.pages_named},
          {"page_objects", pool.page_objects},
          {"damaged_manifests", pool.damaged_manifests},
          {"namespaces", ns}};
}

void PrintPoolStats(const SharedPoolListing& pool, std::ostream& out) {
  const json j = PoolStatsJson(pool);
  out << "pool snapshots:     " << j["snapshots"].get<uint64_t>()
      << "\npool payload bytes: " << j["payload_bytes"].get<uint64_t>()
      << " (each snapshot's layers in full)\npool unique bytes:  " << pool.unique_bytes << " (the "
      << pool.pages_named
      << " pages they name, each once)\npool page objects:  " << pool.page_objects << " ("
      << (pool.page_objects - std::min(pool.page_objects, pool.pages_named))
      << " named by no listed snapshot: compact --shared reclaims them after their grace)\n"
      << "damaged manifests:  " << pool.damaged_manifests
      << (pool.damaged_manifests > 0 ? " (verify --shared names them)" : "") << "\n";
  for (const auto& n : j["namespaces"]) {
    out << "pool namespace " << n["id"].get<std::string>() << " ("
        << n["model_id"].get<std::string>() << "): " << n["snapshots"].get<uint64_t>()
        << " snapshots, " << n["payload_bytes"].get<uint64_t>() << " bytes\n";
  }
}

}  // namespace auxstore::cli
