#include "tools/cli/inspect.h"

#include <chrono>
#include <cstdio>
#include <numeric>
#include <thread>

namespace auxstore::cli {

Result<std::unique_ptr<Store>> OpenForReading(const std::string& path, const std::string& shared) {
  Options o;
  // A shared tier restores into the local directory: read-write then.
  o.read_only = shared.empty();
  o.shared = shared;
  o.background_maintenance = shared.empty();
  return Store::Open(o, path);
}

uint64_t SharedBytes(const Manifest& m, const LayerEntry& l) {
  const uint64_t page_bytes = uint64_t{m.page_tokens} *
                              std::accumulate(l.row_bytes.begin(), l.row_bytes.end(), uint64_t{0});
  uint64_t n = 0;
  for (const PageRun& r : l.runs)
    if (r.owner != m.put_id) n += uint64_t{r.pages} * page_bytes;
  return n;
}

uint64_t SharedBytes(const Manifest& m) {
  uint64_t n = 0;
  for (const LayerEntry& l : m.layers) n += SharedBytes(m, l);
  return n;
}

std::string NamespaceHex(NamespaceId ns) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(ns));
  return b;
}

Result<NamespaceId> ParseNamespaceHex(std::string_view text) {
  std::string_view t = text;
  if (t.starts_with("0x") || t.starts_with("0X")) t.remove_prefix(2);
  if (t.empty() || t.size() > 16) {
    return Status::InvalidArgument("namespace '" + std::string(text) +
                                   "' is not a 1-16 digit hex id");
  }
  NamespaceId v = 0;
  for (char c : t) {
    int d = (c >= '0' && c <= '9')   ? c - '0'
            : (c >= 'a' && c <= 'f') ? c - 'a' + 10
            : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                     : -1;
    if (d < 0) return Status::InvalidArgument("namespace '" + std::string(text) + "' is not hex");
    v = v << 4 | static_cast<unsigned>(d);
  }
  return v;
}

Result<StoreSummary> SummarizeStore(const std::string& path) {
  AUXSTORE_ASSIGN_OR_RETURN(auto store, OpenForReading(path, {}));
  StoreSummary s;
  AUXSTORE_ASSIGN_OR_RETURN(auto namespaces, store->ListNamespaces());
  for (auto& [id, spec] : namespaces) s.namespaces[id].spec = spec;
  AUXSTORE_RETURN_IF_ERROR(store->List(std::nullopt, [&](const SnapshotInfo& i) {
    auto& t = s.namespaces[i.ns];
    ++t.snapshots;
    t.payload_bytes += i.manifest.payload_bytes();
    ++s.snapshots;
    s.payload_bytes += i.manifest.payload_bytes();
    return true;
  }));
  // Unique bytes come from the store's index, which loads in the
  // background; an offline tool can wait for it.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!store->Stats().index_ready && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const StoreStats st = store->Stats();
  s.unique_bytes = st.unique_bytes;
  s.commit_seq = st.commit_seq;
  s.durable_watermark = st.durable_watermark;
  s.quarantines = st.quarantines;
  s.disk_bytes = store->DiskBytes();
  s.stats = st;
  s.stats.snapshots = s.snapshots;  // the index may still be loading: count what List saw
  s.stats.payload_bytes = s.payload_bytes;
  return s;
}

Result<std::vector<SnapshotInfo>> ListSnapshots(const std::string& path,
                                                std::optional<NamespaceId> ns) {
  AUXSTORE_ASSIGN_OR_RETURN(auto store, OpenForReading(path, {}));
  std::vector<SnapshotInfo> out;
  AUXSTORE_RETURN_IF_ERROR(store->List(ns, [&](const SnapshotInfo& i) {
    out.push_back(i);
    return true;
  }));
  return out;
}

Result<SnapshotDetail> FindSnapshot(Store& store, const Prefix& prefix,
                                    std::optional<NamespaceId> ns) {
  std::vector<NamespaceId> candidates;
  if (ns) {
    candidates.push_back(*ns);
  } else {
    AUXSTORE_ASSIGN_OR_RETURN(auto all, store.ListNamespaces());
    for (const auto& [id, spec] : all) candidates.push_back(id);
  }
  std::vector<SnapshotDetail> found;
  for (NamespaceId id : candidates) {
    auto m = store.GetManifest(id, prefix);
    if (m.ok()) {
      AUXSTORE_ASSIGN_OR_RETURN(NamespaceSpec spec, store.GetNamespace(id));
      found.push_back({id, std::move(spec), std::move(*m)});
    } else if (!m.error().IsNotFound()) {
      return m.error();
    }
  }
  if (found.empty()) {
    return Status::NotFound("no snapshot for prefix " + prefix.ToHex() +
                            (ns ? " in namespace " + NamespaceHex(*ns) : std::string()));
  }
  if (found.size() > 1) {
    std::string ids;
    for (const auto& f : found) ids += " " + NamespaceHex(f.ns);
    return Status::InvalidArgument("prefix " + prefix.ToHex() + " is in several namespaces (" +
                                   ids.substr(1) + "); pass --ns");
  }
  return std::move(found.front());
}

Result<SnapshotDetail> InspectSnapshot(const std::string& path, const Prefix& prefix,
                                       std::optional<NamespaceId> ns, const std::string& shared) {
  AUXSTORE_ASSIGN_OR_RETURN(auto store, OpenForReading(path, shared));
  return FindSnapshot(*store, prefix, ns);
}

}  // namespace auxstore::cli
