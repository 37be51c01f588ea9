// The store-level half of auxstore_rados_bench (bench/rados_bench.cc):
// snapshots put through a store whose Options::shared names the pool
// (SharedWrite::kThrough: acknowledged once RADOS acknowledged; and, other
// snapshots, through one with Options::shared_local_copies off: to the pool
// alone; and others again in one PutSnapshots each, with local copies and
// without), then
// restored cold by a second store with an empty local directory (a
// LongestPrefix per snapshot: one batched pool round, pages read and
// checked, the snapshot written into the local store), by a third with one
// CountLeadingStored of all of them (the records in one pool round, the
// pages in groups of snapshots, the local copies written behind) and a
// ReadLayersInto of each into the caller's memory, and by a fourth a
// LongestPrefix and a ReadLayersInto each (the bytes come from the checked
// pages while the local copy is written behind); with
// Options::shared_local_copies off, by a fifth a LongestPrefix and a
// ReadLayersInto each and by a sixth a CountLeadingStored and one
// ReadSnapshotsInto of all (the lookups answer from the pool's records, the
// reads go straight from the pool into memory); and by a seventh, copies
// on, one ReadSnapshotsInto of all with no lookup before.
#include "bench/shared_store_bench.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "auxstore/prefix.h"
#include "auxstore/store.h"
#include "bench/measure.h"
#include "store/rados/rados_pool_check.h"

namespace auxstore::bench {
namespace {

NamespaceSpec BenchSpec() {
  NamespaceSpec s;
  s.model_id = "auxstore-rados-bench";
  s.qsa = {/*hd=*/64,    /*max_tokens=*/4096, /*ratio=*/4, /*rot=*/32, /*theta=*/10000.0f,
           /*eps=*/1e-6f};
  s.dsa = {/*index_head_dim=*/32, /*capacity=*/4096};
  return s;
}

Result<std::unique_ptr<Store>> OpenShared(const std::string& dir, const std::string& uri,
                                          bool local_copies = true) {
  Options o;
  o.shared = uri;
  o.shared_local_copies = local_copies;
  o.shared_write = SharedWrite::kThrough;
  o.background_maintenance = false;
  return Store::Open(o, dir);
}

// Removes every object of the URI's namespace (the bench's own).
void EmptyNamespace(const rados::RadosUri& uri) {
  auto conn = rados::RadosConnection::Open(uri);
  if (!conn.ok()) return;
  auto objects = rados::ListNamespaceObjects(**conn);
  if (!objects.ok()) return;
  for (const std::string& o : *objects) (*conn)->io().remove(o);
}

// Every byte of the last snapshot, from the local store it was restored into.
Status CheckLast(Store& store, NamespaceId ns, const Prefix& last,
                 const std::vector<std::vector<uint8_t>>& bytes) {
  for (size_t l = 0; l < bytes.size(); ++l) {
    AUXSTORE_ASSIGN_OR_RETURN(auto got, store.GetLayer(ns, last, static_cast<uint32_t>(l)));
    if (got != bytes[l])
      return Status::Corruption("restored layer " + std::to_string(l) + " differs");
  }
  return Status::Ok();
}

}  // namespace

Result<StoreFigures> RunStoreLevel(const rados::RadosUri& uri, const std::string& local_dir,
                                   size_t snapshots, size_t layers, size_t layer_bytes, int run) {
  namespace fs = std::filesystem;
  fs::remove_all(local_dir);
  fs::create_directories(local_dir);
  EmptyNamespace(uri);
  const std::string uri_string = uri.ToString();
  // Snapshot s: 64 tokens of its own (one block), `layers` opaque layers.
  std::vector<std::vector<uint8_t>> bytes(layers, std::vector<uint8_t>(layer_bytes));
  // Prefix s of a set (`set` 0: the snapshots restored below; 1: the ones
  // put without local copies).
  const auto prefix_of = [&](size_t set, size_t s) {
    std::vector<uint32_t> tokens(64);
    for (uint32_t t = 0; t < 64; ++t)
      tokens[t] = static_cast<uint32_t>(run * 1'000'000 + set * 500'000 + s * 64 + t);
    return PrefixHashes(tokens, 64, 0).back();
  };
  std::vector<Prefix> prefixes;
  for (size_t s = 0; s < snapshots; ++s) prefixes.push_back(prefix_of(0, s));
  StoreFigures f;
  const double mib = static_cast<double>(snapshots) * layers * layer_bytes / (1024.0 * 1024.0);
  // Puts every snapshot of a set through `store` (its layers made into
  // `bytes`, distinct per run, set and snapshot): seconds in PutSnapshot.
  // Layer l of snapshot s of a set into `out`: distinct per run, set,
  // snapshot and layer.
  const auto make_layer = [&](size_t set, size_t s, size_t l, std::vector<uint8_t>& out) {
    uint64_t x = (run + 1) * 0x9E3779B97F4A7C15ull +
                 ((set * snapshots + s) * layers + l + 1) * 0xD1B54A32D192ED03ull;
    auto* words = reinterpret_cast<uint64_t*>(out.data());
    for (size_t w = 0; w < layer_bytes / 8; ++w) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      words[w] = x;
    }
  };
  const auto put_all = [&](Store& store, NamespaceId ns, size_t set) -> Result<double> {
    double seconds = 0;
    for (size_t s = 0; s < snapshots; ++s) {
      std::vector<LayerBlob> blobs;
      for (size_t l = 0; l < layers; ++l) {
        make_layer(set, s, l, bytes[l]);
        blobs.push_back({static_cast<uint32_t>(l), Kind::kOpaque, bytes[l]});
      }
      Stopwatch sw;  // the put alone, not the making of its bytes
      AUXSTORE_RETURN_IF_ERROR(store.PutSnapshot(ns, prefix_of(set, s), 64, blobs, PutOptions{}));
      seconds += sw.Seconds();
    }
    return seconds;
  };
  // Every snapshot of a set in one PutSnapshots (each its own memory, made
  // before the clock starts); the last one read back from the pool through
  // another store with no local copies, every byte.
  const auto put_batch = [&](Store& store, NamespaceId ns, size_t set,
                             const std::string& reader_dir) -> Result<double> {
    std::vector<std::vector<std::vector<uint8_t>>> data(
        snapshots, std::vector<std::vector<uint8_t>>(layers, std::vector<uint8_t>(layer_bytes)));
    std::vector<std::vector<LayerBlob>> blobs(snapshots);
    std::vector<Store::SnapshotPut> puts(snapshots);
    for (size_t s = 0; s < snapshots; ++s) {
      for (size_t l = 0; l < layers; ++l) {
        make_layer(set, s, l, data[s][l]);
        blobs[s].push_back({static_cast<uint32_t>(l), Kind::kOpaque, data[s][l]});
      }
      puts[s].ns = ns;
      puts[s].prefix = prefix_of(set, s);
      puts[s].token_count = 64;
      puts[s].layers = blobs[s];
    }
    Stopwatch sw;
    AUXSTORE_RETURN_IF_ERROR(store.PutSnapshots(puts));
    const double seconds = sw.Seconds();
    AUXSTORE_ASSIGN_OR_RETURN(auto reader, OpenShared(reader_dir, uri_string, false));
    AUXSTORE_RETURN_IF_ERROR(reader->RegisterNamespace(BenchSpec()).status());
    std::vector<std::vector<uint8_t>> got(layers, std::vector<uint8_t>(layer_bytes));
    std::vector<Store::LayerInto> all(layers);
    for (size_t l = 0; l < layers; ++l) all[l] = {static_cast<uint32_t>(l), got[l]};
    AUXSTORE_RETURN_IF_ERROR(reader->ReadLayersInto(ns, prefix_of(set, snapshots - 1), all));
    if (got != data.back()) return Status::Corruption("a batched put read back differs");
    return seconds;
  };
  for (bool local_copies : {true, false}) {  // batches: sets 2 and 3
    const std::string dir = local_dir + (local_copies ? "/i" : "/j");
    AUXSTORE_ASSIGN_OR_RETURN(auto store, OpenShared(dir, uri_string, local_copies));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, store->RegisterNamespace(BenchSpec()));
    AUXSTORE_ASSIGN_OR_RETURN(double seconds,
                              put_batch(*store, ns, local_copies ? 2 : 3, dir + "-reader"));
    (local_copies ? f.batch_put_mib_s : f.uncopied_batch_put_mib_s) = mib / seconds;
  }
  {  // without local copies: the pool alone (another set of snapshots)
    AUXSTORE_ASSIGN_OR_RETURN(auto h, OpenShared(local_dir + "/h", uri_string, false));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, h->RegisterNamespace(BenchSpec()));
    AUXSTORE_ASSIGN_OR_RETURN(double seconds, put_all(*h, ns, 1));
    f.uncopied_put_mib_s = mib / seconds;
    // The last one read back from the pool, every byte.
    std::vector<std::vector<uint8_t>> got(layers, std::vector<uint8_t>(layer_bytes));
    std::vector<Store::LayerInto> all(layers);
    for (size_t l = 0; l < layers; ++l) all[l] = {static_cast<uint32_t>(l), got[l]};
    AUXSTORE_RETURN_IF_ERROR(h->ReadLayersInto(ns, prefix_of(1, snapshots - 1), all));
    if (got != bytes) return Status::Corruption("a put without local copies read back differs");
  }
  {  // last: `bytes` keeps the last snapshot's layers, checked after restores
    AUXSTORE_ASSIGN_OR_RETURN(auto a, OpenShared(local_dir + "/a", uri_string));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, a->RegisterNamespace(BenchSpec()));
    AUXSTORE_ASSIGN_OR_RETURN(double seconds, put_all(*a, ns, 0));
    f.put_mib_s = mib / seconds;
  }
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto b, OpenShared(local_dir + "/b", uri_string));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, b->RegisterNamespace(BenchSpec()));
    Stopwatch sw;
    for (size_t s = 0; s < snapshots; ++s) {
      AUXSTORE_ASSIGN_OR_RETURN(auto found, b->LongestPrefix(ns, std::span(&prefixes[s], 1)));
      if (!found || *found != 0) {
        return Status::NotFound("the cold store did not find snapshot " + std::to_string(s));
      }
    }
    (void)b->Stats();  // returns once every local copy is written
    f.restore_mib_s = mib / sw.Seconds();
    AUXSTORE_RETURN_IF_ERROR(CheckLast(*b, ns, prefixes.back(), bytes));
  }
  // The caller's memory for restores into it: every page touched before
  // the clock starts.
  std::vector<std::vector<uint8_t>> into(layers, std::vector<uint8_t>(layer_bytes, 1));
  std::vector<Store::LayerInto> wanted(layers);
  for (size_t l = 0; l < layers; ++l) wanted[l] = {static_cast<uint32_t>(l), into[l]};
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto c, OpenShared(local_dir + "/c", uri_string));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, c->RegisterNamespace(BenchSpec()));
    Stopwatch sw;
    const double cpu = ProcessCpuSeconds();
    AUXSTORE_ASSIGN_OR_RETURN(size_t leading, c->CountLeadingStored(ns, prefixes));
    if (leading != snapshots) {
      return Status::NotFound("the batched cold restore found " + std::to_string(leading) + " of " +
                              std::to_string(snapshots) + " snapshots");
    }
    for (size_t s = 0; s < snapshots; ++s) {
      AUXSTORE_RETURN_IF_ERROR(c->ReadLayersInto(ns, prefixes[s], wanted));
    }
    f.batch_restore_mib_s = mib / sw.Seconds();
    (void)c->Stats();  // returns once every local copy is written
    f.batch_restore_settled_mib_s = mib / sw.Seconds();
    f.batch_cpu_ms_per_mib = (ProcessCpuSeconds() - cpu) * 1000 / mib;
    if (into != bytes) return Status::Corruption("a layer of the batch read into memory differs");
    AUXSTORE_RETURN_IF_ERROR(CheckLast(*c, ns, prefixes.back(), bytes));
  }
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto d, OpenShared(local_dir + "/d", uri_string));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, d->RegisterNamespace(BenchSpec()));
    Stopwatch sw;
    const double cpu = ProcessCpuSeconds();
    for (size_t s = 0; s < snapshots; ++s) {
      AUXSTORE_ASSIGN_OR_RETURN(auto found, d->LongestPrefix(ns, std::span(&prefixes[s], 1)));
      if (!found || *found != 0) {
        return Status::NotFound("the cold store did not find snapshot " + std::to_string(s));
      }
      AUXSTORE_RETURN_IF_ERROR(d->ReadLayersInto(ns, prefixes[s], wanted));
    }
    f.restore_into_mib_s = mib / sw.Seconds();
    (void)d->Stats();  // returns once every local copy is written
    f.restore_into_settled_mib_s = mib / sw.Seconds();
    f.into_cpu_ms_per_mib = (ProcessCpuSeconds() - cpu) * 1000 / mib;
    if (into != bytes) return Status::Corruption("a layer read into memory differs");
    AUXSTORE_RETURN_IF_ERROR(CheckLast(*d, ns, prefixes.back(), bytes));
  }
  // Every snapshot its own memory, touched before the clock starts, for
  // one ReadSnapshotsInto of all.
  std::vector<std::vector<uint8_t>> all(snapshots * layers, std::vector<uint8_t>(layer_bytes, 1));
  std::vector<Store::LayerInto> to(snapshots * layers);
  std::vector<Store::SnapshotInto> snaps;
  const auto read_all = [&](Store& store, NamespaceId ns) -> Status {
    snaps.clear();
    for (size_t s = 0; s < snapshots; ++s) {
      for (size_t l = 0; l < layers; ++l)
        to[s * layers + l] = {static_cast<uint32_t>(l), all[s * layers + l]};
      snaps.push_back({ns, prefixes[s], std::span(to).subspan(s * layers, layers)});
    }
    store.ReadSnapshotsInto(snaps);
    return Status::Ok();
  };
  const auto check_all = [&]() -> Status {
    for (const Store::LayerInto& l : to) AUXSTORE_RETURN_IF_ERROR(l.status);
    for (size_t l = 0; l < layers; ++l) {
      if (all[(snapshots - 1) * layers + l] != bytes[l])
        return Status::Corruption("a layer of ReadSnapshotsInto differs");
    }
    for (auto& layer : all) std::fill(layer.begin(), layer.end(), 1);
    return Status::Ok();
  };
  {
    // Options::shared_local_copies off: the lookups answer from the pool's
    // records, the reads go straight from the pool into memory.
    AUXSTORE_ASSIGN_OR_RETURN(auto e, OpenShared(local_dir + "/e", uri_string, false));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, e->RegisterNamespace(BenchSpec()));
    for (auto& layer : into) std::fill(layer.begin(), layer.end(), 1);
    Stopwatch sw;
    for (size_t s = 0; s < snapshots; ++s) {
      AUXSTORE_ASSIGN_OR_RETURN(auto found, e->LongestPrefix(ns, std::span(&prefixes[s], 1)));
      if (!found || *found != 0) {
        return Status::NotFound("the store without copies did not find snapshot " +
                                std::to_string(s));
      }
      AUXSTORE_RETURN_IF_ERROR(e->ReadLayersInto(ns, prefixes[s], wanted));
    }
    f.uncopied_each_mib_s = mib / sw.Seconds();
    if (into != bytes) return Status::Corruption("a layer read from the pool differs");
  }
  {
    AUXSTORE_ASSIGN_OR_RETURN(auto g, OpenShared(local_dir + "/f", uri_string, false));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, g->RegisterNamespace(BenchSpec()));
    Stopwatch sw;
    AUXSTORE_ASSIGN_OR_RETURN(size_t leading, g->CountLeadingStored(ns, prefixes));
    if (leading != snapshots) {
      return Status::NotFound("the store without copies found " + std::to_string(leading) + " of " +
                              std::to_string(snapshots) + " snapshots");
    }
    AUXSTORE_RETURN_IF_ERROR(read_all(*g, ns));
    f.uncopied_batch_mib_s = mib / sw.Seconds();
    AUXSTORE_RETURN_IF_ERROR(check_all());
  }
  {
    // Local copies on, no lookup before: the copies of what the queue has
    // room for written behind.
    AUXSTORE_ASSIGN_OR_RETURN(auto h, OpenShared(local_dir + "/g", uri_string));
    AUXSTORE_ASSIGN_OR_RETURN(NamespaceId ns, h->RegisterNamespace(BenchSpec()));
    Stopwatch sw;
    AUXSTORE_RETURN_IF_ERROR(read_all(*h, ns));
    f.pool_into_all_mib_s = mib / sw.Seconds();
    AUXSTORE_RETURN_IF_ERROR(check_all());
  }
  fs::remove_all(local_dir);
  EmptyNamespace(uri);
  return f;
}

}  // namespace auxstore::bench
