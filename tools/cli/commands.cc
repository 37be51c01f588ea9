#include "tools/cli/commands.h"

#include <CLI/CLI.hpp>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>

#include "auxstore/maintenance.h"
#include "auxstore/metrics.h"
#include "tools/cli/export_import.h"
#include "tools/cli/inspect.h"
#include "tools/cli/pool_report.h"
#include "tools/cli/progress.h"

namespace auxstore::cli {
namespace {

using nlohmann::json;

std::string Hex64(uint64_t v) { return NamespaceHex(v); }

json SpecJson(const NamespaceSpec& s) {
  return {{"model_id", s.model_id},
          {"qsa",
           {{"hd", s.qsa.hd},
            {"max_tokens", s.qsa.max_tokens},
            {"ratio", s.qsa.ratio},
            {"rot", s.qsa.rot},
            {"theta", s.qsa.theta},
            {"eps", s.qsa.eps}}},
          {"dsa", {{"index_head_dim", s.dsa.index_head_dim}, {"capacity", s.dsa.capacity}}}};
}

json CorruptJson(const CorruptSnapshot& c) {
  json j = {{"namespace", Hex64(c.ns)}, {"prefix", c.prefix.ToHex()}, {"why", c.why}};
  j["layer"] = c.layer ? json(*c.layer) : json(nullptr);
  return j;
}

std::string Where(const CorruptSnapshot& c) {
  return Hex64(c.ns) + "/" + c.prefix.ToHex() +
         (c.layer ? " layer " + std::to_string(*c.layer) : std::string());
}

// Shared by every command: how to print, and how a failed Status exits.
struct Context {
  std::ostream& out;
  std::ostream& err;
  bool json = false;
  int code = kExitOk;

  int Fail(const Status& s) {
    if (json) {
      out << json::object({{"error", s.ToString()}, {"code", StatusCodeName(s.code())}}).dump(2)
          << "\n";
    }
    err << "auxstore: " << s.ToString() << "\n";
    return code = kExitError;
  }
};

void PrintVerify(Context& c, const VerifyReport& r, const RepairReport* repair) {
  if (c.json) {
    json j = {{"clean", r.clean()},
              {"namespaces", r.namespaces},
              {"snapshots_checked", r.snapshots_checked},
              {"snapshots_ok", r.snapshots_ok},
              {"bytes_checked", r.bytes_checked},
              {"records_checked", r.records_checked},
              {"puts_checked", r.puts_checked},
              {"pages_checked", r.pages_checked},
              {"shared_pages", r.shared_pages},
              {"orphan_puts", r.orphan_puts},
              {"orphan_records", r.orphan_records},
              {"orphan_bytes", r.orphan_bytes},
              {"stale_entries", r.stale_entries},
              {"commit_seq", r.commit_seq},
              {"watermark", r.watermark ? json(*r.watermark) : json(nullptr)},
              {"watermark_lost", r.watermark_lost},
              {"lost_commits", r.lost_commits},
              {"store_problems", r.store_problems},
              {"corrupt", json::array()}};
    for (const auto& x : r.corrupt) j["corrupt"].push_back(CorruptJson(x));
    if (repair) {
      json rep = {{"removed", json::array()},
                  {"not_repaired", repair->not_repaired},
                  {"accepted_data_loss", repair->accepted_data_loss},
                  {"tables_set_aside", repair->tables_set_aside}};
      for (const auto& x : repair->removed) rep["removed"].push_back(CorruptJson(x));
      j["repair"] = std::move(rep);
    }
    c.out << j.dump(2) << "\n";
    return;
  }
  c.out << "namespaces:        " << r.namespaces << "\n"
        << "snapshots checked: " << r.snapshots_checked << " (" << r.snapshots_ok << " ok, "
        << r.corrupt.size() << " corrupt)\n"
        << "bytes checked:     " << r.bytes_checked << " in " << r.records_checked << " records of "
        << r.puts_checked << " puts\n"
        << "pages checked:     " << r.pages_checked << " (" << r.shared_pages
        << " shared by several snapshots)\n"
        << "orphans:           " << r.orphan_puts << " puts, " << r.orphan_records << " records, "
        << r.orphan_bytes << " bytes; " << r.stale_entries
        << " stale entries (not corruption; `compact` removes them)\n"
        << "commit sequence:   " << r.commit_seq << ", durable watermark "
        << (r.watermark ? std::to_string(*r.watermark) : std::string("none")) << "\n";
  if (r.watermark_lost) {
    c.out << "CORRUPT store: lost " << r.lost_commits
          << " committed snapshots (the durable watermark is ahead of what RocksDB recovered: a "
             "truncated WAL or MANIFEST)\n";
  }
  for (const auto& p : r.store_problems) c.out << "CORRUPT store: " << p << "\n";
  for (const auto& x : r.corrupt) c.out << "CORRUPT " << Where(x) << ": " << x.why << "\n";
  if (repair) {
    for (const auto& t : repair->tables_set_aside) c.out << "SET ASIDE: " << t << "\n";
    for (const auto& x : repair->removed) c.out << "REMOVED " << Where(x) << "\n";
    for (const auto& p : repair->not_repaired) c.out << "NOT REPAIRED: " << p << "\n";
    if (repair->accepted_data_loss) c.out << "accepted the lost commits; watermark reset\n";
    c.out << "repair removed " << repair->removed.size() << " snapshots\n";
  }
  c.out << (r.clean() ? "verify: clean\n" : "verify: CORRUPTION FOUND\n");
}

// verify and compact --shared: the store opened on the pool (Options::shared),
// whose Verify, Repair and Compact cover the pool after the local store.
Result<std::unique_ptr<Store>> OpenShared(const std::string& path, const std::string& shared,
                                          bool accept_loss = false) {
  Options o;
  o.shared = shared;
  o.accept_data_loss = accept_loss;
  o.background_maintenance = false;
  return Store::Open(o, path);
}

int RunVerify(Context& c, const std::string& path, bool repair, bool accept_loss,
              const std::string& shared) {
  Progress progress("verify");
  VerifyOptions o;
  o.progress = [&](const VerifyProgress& p) { progress.Update(p); };
  if (!shared.empty()) {
    auto store = OpenShared(path, shared, accept_loss);
    if (!store.ok()) return c.Fail(store.status());
    auto r = (*store)->Verify(o);
    if (!r.ok()) return c.Fail(r.error());
    Result<RepairReport> rep = RepairReport{};
    if (repair) rep = (*store)->Repair(*r);
    if (!rep.ok()) return c.Fail(rep.error());
    PrintVerify(c, *r, repair ? &*rep : nullptr);
    return c.code = r->clean() ? kExitOk : kExitCorruption;
  }
  if (!repair) {
    auto r = VerifyStoreAt(path, o);
    if (!r.ok()) return c.Fail(r.error());
    PrintVerify(c, *r, nullptr);
    return c.code = r->clean() ? kExitOk : kExitCorruption;
  }
  VerifyReport report;
  auto rep = RepairStoreAt(path, accept_loss, &report, o);
  if (!rep.ok()) return c.Fail(rep.error());
  PrintVerify(c, report, &*rep);
  // Corruption found is exit 1 even when repair removed it.
  return c.code = report.clean() ? kExitOk : kExitCorruption;
}

int RunCompact(Context& c, const std::string& path, const CompactOptions& o,
               const std::string& shared) {
  Result<CompactReport> r = CompactReport{};
  if (shared.empty()) {
    r = CompactStoreAt(path, o);
  } else {
    auto store = OpenShared(path, shared);
    if (!store.ok()) return c.Fail(store.status());
    r = (*store)->Compact(o);
  }
  if (!r.ok()) return c.Fail(r.error());
  if (c.json) {
    c.out << json({{"snapshots_before", r->snapshots_before},
                   {"snapshots_after", r->snapshots_after},
                   {"payload_bytes_before", r->payload_bytes_before},
                   {"payload_bytes_after", r->payload_bytes_after},
                   {"disk_bytes_before", r->disk_bytes_before},
                   {"disk_bytes_after", r->disk_bytes_after},
                   {"disk_bytes_freed", r->disk_bytes_freed()},
                   {"dropped_by_namespace", r->dropped_by_namespace},
                   {"expired", r->expired},
                   {"evicted", r->evicted},
                   {"orphan_puts_removed", r->orphan_puts_removed},
                   {"orphan_records_removed", r->orphan_records_removed},
                   {"stale_entries_removed", r->stale_entries_removed},
                   {"relaid_snapshots", r->relaid_snapshots},
                   {"relaid_bytes", r->relaid_bytes},
                   {"relayout_skipped", r->relayout_skipped}})
                 .dump(2)
          << "\n";
  } else {
    c.out << "snapshots:     " << r->snapshots_before << " -> " << r->snapshots_after << "\n"
          << "payload bytes: " << r->payload_bytes_before << " -> " << r->payload_bytes_after
          << "\n"
          << "removed:       " << r->dropped_by_namespace << " by namespace, " << r->expired
          << " expired, " << r->evicted << " evicted, " << r->orphan_puts_removed
          << " orphan puts, " << r->orphan_records_removed << " stray records, "
          << r->stale_entries_removed << " stale entries\n"
          << "re-laid out:   " << r->relaid_snapshots << " snapshots (" << r->relaid_bytes
          << " bytes written), " << r->relayout_skipped << " left as they were\n"
          << "disk bytes:    " << r->disk_bytes_before << " -> " << r->disk_bytes_after
          << " (freed " << r->disk_bytes_freed() << ")\n";
  }
  return c.code = kExitOk;
}

int RunStats(Context& c, const std::string& path, const std::string& prometheus,
             const std::string& shared) {
  auto r = SummarizeStore(path);
  if (!r.ok()) return c.Fail(r.error());
  std::optional<SharedPoolListing> pool;
  if (!shared.empty()) {
    auto listed = ListSharedPool(shared);
    if (!listed.ok()) return c.Fail(listed.error());
    pool = std::move(*listed);
  }
  if (!prometheus.empty()) {
    std::string text;
    AppendStoreMetrics(r->stats, "store=\"" + EscapePrometheusLabel(path) + "\"", &text);
    if (prometheus == "-") {
      c.out << text;
      return c.code = kExitOk;
    }
    std::ofstream f(prometheus, std::ios::trunc);
    f << text;
    f.close();
    if (!f) return c.Fail(Status::IOError("cannot write " + prometheus));
  }
  if (c.json) {
    json ns = json::array();
    for (const auto& [id, t] : r->namespaces) {
      ns.push_back({{"id", Hex64(id)},
                    {"spec", SpecJson(t.spec)},
                    {"snapshots", t.snapshots},
                    {"payload_bytes", t.payload_bytes}});
    }
    json report = {{"snapshots", r->snapshots},       {"payload_bytes", r->payload_bytes},
                   {"unique_bytes", r->unique_bytes}, {"disk_bytes", r->disk_bytes},
                   {"commit_seq", r->commit_seq},     {"durable_watermark", r->durable_watermark},
                   {"quarantines", r->quarantines},   {"namespaces", ns}};
    if (pool) report["pool"] = PoolStatsJson(*pool);
    c.out << report.dump(2) << "\n";
  } else {
    c.out << "snapshots:     " << r->snapshots << "\npayload bytes: " << r->payload_bytes
          << " (each snapshot's layers in full)\nunique bytes:  " << r->unique_bytes
          << " (stored, each shared page once)\ndisk bytes:    " << r->disk_bytes
          << "\ncommit seq:    " << r->commit_seq << " (durable watermark " << r->durable_watermark
          << ")\nquarantines:   " << r->quarantines << "\n";
    for (const auto& [id, t] : r->namespaces) {
      c.out << "namespace " << Hex64(id) << " (" << t.spec.model_id << "): " << t.snapshots
            << " snapshots, " << t.payload_bytes << " bytes\n";
    }
    if (pool) PrintPoolStats(*pool, c.out);
  }
  return c.code = kExitOk;
}

int RunLs(Context& c, const std::string& path, std::optional<NamespaceId> ns,
          const std::string& shared) {
  auto r = ListSnapshots(path, ns);
  if (!r.ok()) return c.Fail(r.error());
  if (!shared.empty()) {
    auto pool = ListSharedPool(shared, ns);
    if (!pool.ok()) return c.Fail(pool.error());
    PrintMergedListing(*r, *pool, c.json, c.out);
    if (pool->damaged_manifests > 0) {
      c.err << "auxstore: the pool holds " << pool->damaged_manifests
            << " damaged manifest object(s), not listed (verify --shared names them)\n";
    }
    return c.code = kExitOk;
  }
  json arr = json::array();
  for (const SnapshotInfo& s : *r) {
    if (c.json) {
      arr.push_back(SnapshotJson(s));
    } else {
      c.out << SnapshotLine(s);
    }
  }
  if (c.json) c.out << arr.dump(2) << "\n";
  return c.code = kExitOk;
}

int RunInspect(Context& c, const std::string& path, const Prefix& prefix,
               std::optional<NamespaceId> ns, const std::string& shared) {
  auto r = InspectSnapshot(path, prefix, ns, shared);
  if (!r.ok()) return c.Fail(r.error());
  const Manifest& m = r->manifest;
  if (c.json) {
    json layers = json::array();
    for (const LayerEntry& l : m.layers) {
      json runs = json::array();
      for (const PageRun& run : l.runs) {
        runs.push_back({{"first_page", run.first_page},
                        {"pages", run.pages},
                        {"owner", Hex64(run.owner)},
                        {"own", run.owner == m.put_id}});
      }
      layers.push_back({{"layer", l.layer},
                        {"kind", std::string(KindName(l.kind))},
                        {"bytes", l.bytes},
                        {"rows", l.rows},
                        {"pages", l.full_pages()},
                        {"shared_bytes", SharedBytes(m, l)},
                        {"digest", Hex64(l.xxh3)},
                        {"runs", runs}});
    }
    c.out << json({{"namespace", Hex64(r->ns)},
                   {"spec", SpecJson(r->spec)},
                   {"prefix", prefix.ToHex()},
                   {"token_count", m.token_count},
                   {"created_unix_ms", m.created_unix_ms},
                   {"chunk_bytes", m.chunk_bytes},
                   {"put_id", Hex64(m.put_id)},
                   {"page_tokens", m.page_tokens},
                   {"has_token_digest", m.token_digest.has_value()},
                   {"payload_bytes", m.payload_bytes()},
                   {"shared_bytes", SharedBytes(m)},
                   {"layers", layers}})
                 .dump(2)
          << "\n";
  } else {
    const NamespaceSpec& s = r->spec;
    c.out << "namespace " << Hex64(r->ns) << " model " << s.model_id << "\n  QSA hd=" << s.qsa.hd
          << " max_tokens=" << s.qsa.max_tokens << " ratio=" << s.qsa.ratio << " rot=" << s.qsa.rot
          << " theta=" << s.qsa.theta << " eps=" << s.qsa.eps
          << "\n  DSA index_head_dim=" << s.dsa.index_head_dim << " capacity=" << s.dsa.capacity
          << "\nprefix " << prefix.ToHex() << "\ntokens " << m.token_count << ", created "
          << m.created_unix_ms << " ms, chunk " << m.chunk_bytes << " bytes, token digest "
          << (m.token_digest ? "yes" : "no") << "\nput " << Hex64(m.put_id) << ", pages of "
          << m.page_tokens << " tokens, " << SharedBytes(m) << " of " << m.payload_bytes()
          << " bytes shared from earlier puts\n";
    for (const LayerEntry& l : m.layers) {
      c.out << "  layer " << l.layer << " " << KindName(l.kind) << " " << l.bytes << " bytes, "
            << l.rows << " rows, " << l.full_pages() << " pages (" << SharedBytes(m, l)
            << " bytes shared), digest " << Hex64(l.xxh3) << "\n";
    }
  }
  return c.code = kExitOk;
}

int RunMigrate(Context& c, const std::string& path) {
  auto r = MigrateStoreAt(path);
  if (!r.ok()) return c.Fail(r.error());
  if (c.json) {
    json skipped = json::array();
    for (const auto& x : r->skipped) skipped.push_back(CorruptJson(x));
    c.out << json({{"from_version", r->from_version},
                   {"to_version", r->to_version},
                   {"already_current", r->already_current},
                   {"namespaces", r->namespaces},
                   {"snapshots", r->snapshots},
                   {"bytes", r->bytes},
                   {"skipped", skipped},
                   {"backup", r->backup}})
                 .dump(2)
          << "\n";
  } else if (r->already_current) {
    c.out << "store " << path << " is already format version " << r->to_version
          << "; nothing to do\n";
  } else {
    for (const auto& x : r->skipped)
      c.out << "NOT CARRIED OVER " << Where(x) << ": " << x.why << "\n";
    c.out << "migrated " << r->snapshots << " snapshots (" << r->bytes << " bytes) in "
          << r->namespaces << " namespaces from format version " << r->from_version << " to "
          << r->to_version << "; the old store is kept at " << r->backup << "\n";
  }
  return c.code = r->skipped.empty() ? kExitOk : kExitCorruption;
}

}  // namespace

int RunCli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  Context c{out, err};
  CLI::App app{"auxstore: inspect, check and maintain an auxstore snapshot store", "auxstore"};
  app.require_subcommand(1);
  std::string path, prefix_hex, ns_hex, dir, shared;
  bool repair = false, accept_loss = false;
  CompactOptions co;
  std::vector<std::string> keep_ns, drop_ns;
  uint64_t max_layer_bytes = kDefaultMaxLayerBytes;
  std::function<int()> run;

  auto common = [&](CLI::App* sub) {
    sub->add_option("PATH", path, "store directory")->required();
    sub->add_flag("--json", c.json, "print the report as JSON");
  };
  // --shared URI: the store on a RADOS pool too (docs/shared-tier.md).
  auto with_shared = [&](CLI::App* sub, const char* what) {
    sub->add_option("--shared", shared,
                    std::string("rados://POOL?conf=PATH&namespace=NS: ") + what);
  };
  auto parse_prefix = [&]() -> Result<Prefix> { return Prefix::FromHex(prefix_hex); };
  auto parse_ns = [&]() -> Result<std::optional<NamespaceId>> {
    if (ns_hex.empty()) return std::optional<NamespaceId>();
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId id, ParseNamespaceHex(ns_hex));
    return std::optional<NamespaceId>(id);
  };

  auto* verify = app.add_subcommand(
      "verify",
      "Full scrub: file checksums, watermark, every manifest against its records. "
      "Exit 0 clean, 1 corruption found, 2 error");
  common(verify);
  verify->add_flag("--repair", repair,
                   "quarantine the corrupt snapshots found (manifest removed, records deleted)");
  verify->add_flag("--accept-data-loss", accept_loss,
                   "with --repair: accept commits lost to a truncated WAL/MANIFEST");
  with_shared(verify, "verify (and --repair) the pool too, after the local store");
  verify->callback([&] { run = [&] { return RunVerify(c, path, repair, accept_loss, shared); }; });

  auto* compact = app.add_subcommand(
      "compact",
      "Remove orphans, expired, dropped-namespace and over-budget snapshots, lay each "
      "chain's pages out as one stream, then compact (needs the store to itself)");
  common(compact);
  compact->add_option("--ttl", co.ttl_seconds, "remove snapshots older than this many seconds");
  compact->add_option("--max-bytes", co.max_bytes,
                      "evict least-recently-used snapshots down to this payload size");
  compact->add_option("--keep-ns", keep_ns, "keep only these namespaces (hex ids)");
  compact->add_option("--drop-ns", drop_ns, "remove these namespaces' snapshots (hex ids)");
  bool keep_layout = false;
  compact->add_flag("--keep-layout", keep_layout,
                    "leave every chain's pages where they are (no re-layout into one stream)");
  with_shared(compact,
              "also drop the pool's expired leases and reclaim its unnamed pages older than 60 s");
  compact->callback([&] {
    run = [&] {
      for (auto* list : {&keep_ns, &drop_ns}) {
        for (const std::string& s : *list) {
          auto id = ParseNamespaceHex(s);
          if (!id.ok()) return c.Fail(id.error());
          (list == &keep_ns ? co.keep_ns : co.drop_ns).push_back(*id);
        }
      }
      co.relayout = !keep_layout;
      return RunCompact(c, path, co, shared);
    };
  });

  std::string prometheus;
  auto* stats = app.add_subcommand("stats", "Snapshot and byte counts, per namespace");
  common(stats);
  stats->add_option("--prometheus", prometheus,
                    "also write the store's metrics in Prometheus text format to this file "
                    "(- for stdout instead of the report)");
  with_shared(stats, "the pool's snapshots, pages and namespaces too");
  stats->callback([&] { run = [&] { return RunStats(c, path, prometheus, shared); }; });

  auto* ls = app.add_subcommand("ls", "List snapshots");
  common(ls);
  ls->add_option("--ns", ns_hex, "only this namespace (hex id)");
  with_shared(ls, "the pool's snapshots too, each marked where=local|pool|both");
  ls->callback([&] {
    run = [&] {
      auto ns = parse_ns();
      return ns.ok() ? RunLs(c, path, *ns, shared) : c.Fail(ns.error());
    };
  });

  auto* inspect = app.add_subcommand("inspect", "A snapshot's manifest, layers and geometry");
  common(inspect);
  inspect->add_option("PREFIX", prefix_hex, "prefix, 32 hex digits")->required();
  inspect->add_option("--ns", ns_hex, "namespace (hex id); found by scanning when omitted");
  with_shared(inspect,
              "restore the snapshot from the pool when the directory lacks it (needs --ns; opens "
              "the directory read-write)");
  inspect->callback([&] {
    run = [&] {
      auto p = parse_prefix();
      if (!p.ok()) return c.Fail(p.error());
      auto ns = parse_ns();
      return ns.ok() ? RunInspect(c, path, *p, *ns, shared) : c.Fail(ns.error());
    };
  });

  auto* exp = app.add_subcommand("export", "Write a snapshot as plain files into DIR");
  common(exp);
  exp->add_option("PREFIX", prefix_hex, "prefix, 32 hex digits")->required();
  exp->add_option("DIR", dir, "new (or empty) directory")->required();
  exp->add_option("--ns", ns_hex, "namespace (hex id), needed when the prefix is in several");
  with_shared(exp,
              "restore the snapshot from the pool when the directory lacks it (needs --ns; opens "
              "the directory read-write)");
  exp->callback([&] {
    run = [&] {
      auto p = parse_prefix();
      if (!p.ok()) return c.Fail(p.error());
      auto ns = parse_ns();
      if (!ns.ok()) return c.Fail(ns.error());
      auto r = ExportSnapshot(path, *p, *ns, dir, shared);
      if (!r.ok()) return c.Fail(r.error());
      if (c.json) {
        c.out << json({{"namespace", Hex64(r->ns)},
                       {"prefix", r->prefix.ToHex()},
                       {"layers", r->layers},
                       {"bytes", r->bytes},
                       {"dir", dir}})
                     .dump(2)
              << "\n";
      } else {
        c.out << "exported " << r->layers << " layers, " << r->bytes << " bytes to " << dir << "\n";
      }
      return c.code = kExitOk;
    };
  });

  auto* imp = app.add_subcommand("import", "Validate an exported DIR, then store it atomically");
  common(imp);
  imp->add_option("DIR", dir, "directory written by export")->required();
  imp->add_option("--max-layer-bytes", max_layer_bytes, "largest opaque layer accepted");
  with_shared(imp, "put the snapshot in the pool too (returns once the pool has it)");
  imp->callback([&] {
    run = [&] {
      auto r = ImportSnapshot(path, dir, max_layer_bytes, shared);
      if (!r.ok()) return c.Fail(r.error());
      if (c.json) {
        c.out << json({{"namespace", Hex64(r->ns)},
                       {"prefix", r->prefix.ToHex()},
                       {"layers", r->layers},
                       {"bytes", r->bytes},
                       {"already_present", r->already_present}})
                     .dump(2)
              << "\n";
      } else if (r->already_present) {
        c.out << "prefix " << r->prefix.ToHex() << " is already stored; nothing written\n";
      } else {
        c.out << "imported " << r->layers << " layers, " << r->bytes << " bytes as " << Hex64(r->ns)
              << "/" << r->prefix.ToHex() << "\n";
      }
      return c.code = kExitOk;
    };
  });

  auto* migrate = app.add_subcommand(
      "migrate",
      "Convert a store of format version 1 to this build's, offline and crash-safe (the old "
      "store is kept at PATH.v1). Exit 0 done, 1 some snapshots were damaged and not carried "
      "over, 2 error");
  common(migrate);
  migrate->callback([&] { run = [&] { return RunMigrate(c, path); }; });

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e, out, err);
    return rc == 0 ? kExitOk : kExitError;
  }
  return run ? run() : kExitError;
}

}  // namespace auxstore::cli
