#include "bench/store_contender.h"

#include <cstring>
#include <filesystem>
#include <random>
#include <thread>
#include <vector>

#include "bench/measure.h"

namespace auxstore::bench {
namespace {

NamespaceSpec BenchSpec() {
  NamespaceSpec s;
  s.model_id = "bench";
  s.qsa = {128, 32768, 8, 64, 10000.0f, 1e-6f};
  return s;
}

Prefix NthPrefix(uint64_t n) {
  Prefix p;
  for (int i = 0; i < 8; ++i) p.bytes[i] = static_cast<uint8_t>(n >> (8 * i));
  p.bytes[8] = 0xA5;  // fixed non-zero tail
  return p;
}

}  // namespace

NamespaceId BenchNamespace() { return NamespaceFingerprint(BenchSpec()); }
Prefix BenchPrefix(uint64_t n) { return NthPrefix(n); }

WriteResult StoreContender::Write(const WorkloadData& data, Durability mode) {
  std::filesystem::remove_all(dir_);
  Options o;
  o.durability = mode;
  o.background_maintenance = false;
  auto store = Store::Open(o, dir_);
  if (!store.ok()) return {};
  const NamespaceId ns = (*store)->RegisterNamespace(BenchSpec()).value();
  const Workload& w = data.workload();
  std::vector<LayerBlob> layers(w.layers);
  const uint64_t written_before = ProcessWriteBytes();
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    for (uint32_t l = 0; l < w.layers; ++l) layers[l] = {l, Kind::kOpaque, data.Layer(s, l)};
    if (!(*store)->PutSnapshot(ns, NthPrefix(s), 1, layers).ok()) return {};
  }
  if (mode == Durability::kAsync && !(*store)->Flush().ok()) return {};
  WriteResult r;
  r.seconds = t.Seconds();
  r.amplification = static_cast<double>(ProcessWriteBytes() - written_before) /
                    static_cast<double>(w.total_bytes());
  return r;
}

namespace {

// The written store, opened for reads; `cold`: its pages dropped first.
std::unique_ptr<Store> OpenToRead(const std::string& dir, bool cold) {
  Options o;
  o.background_maintenance = false;
  auto store = Store::Open(o, dir);
  if (!store.ok()) return nullptr;
  if (cold) DropPageCache(dir);
  return std::move(*store);
}

}  // namespace

double StoreContender::ReadLayers(const WorkloadData& data, bool cold) {
  auto store = OpenToRead(dir_, cold);
  if (!store) return -1;
  const NamespaceId ns = NamespaceFingerprint(BenchSpec());
  const Workload& w = data.workload();
  HugeBuffer buf(w.layer_bytes);
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    for (uint32_t l = 0; l < w.layers; ++l) {
      Status st = store->ReadLayer(ns, NthPrefix(s), l, [&](uint64_t off, ByteSpan c) {
        std::memcpy(buf.data() + off, c.data(), c.size());
        return Status::Ok();
      });
      if (!st.ok()) return -1;
    }
  }
  return t.Seconds();
}

double StoreContender::ReadLayersInto(const WorkloadData& data, bool cold) {
  auto store = OpenToRead(dir_, cold);
  if (!store) return -1;
  const NamespaceId ns = NamespaceFingerprint(BenchSpec());
  const Workload& w = data.workload();
  HugeBuffer buf(w.snapshot_bytes());
  std::vector<Store::LayerInto> layers(w.layers);
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    for (uint32_t l = 0; l < w.layers; ++l) {
      layers[l] = {.layer = l, .dst = buf.span().subspan(l * w.layer_bytes, w.layer_bytes)};
    }
    if (!store->ReadLayersInto(ns, NthPrefix(s), layers).ok()) return -1;
  }
  return t.Seconds();
}

IndexFigures MeasureIndex(const std::string& dir, uint64_t manifests, uint32_t probes) {
  IndexFigures f;
  f.manifests = manifests;
  std::filesystem::remove_all(dir);
  Options o;
  o.durability = Durability::kAsync;
  o.background_maintenance = false;
  {
    auto store = Store::Open(o, dir);
    if (!store.ok()) return f;
    const NamespaceId ns = (*store)->RegisterNamespace(BenchSpec()).value();
    uint8_t byte = 7;
    LayerBlob layer{0, Kind::kOpaque, {&byte, 1}};
    for (uint64_t i = 0; i < manifests; ++i) {
      if (!(*store)->PutSnapshot(ns, NthPrefix(i), 1, {&layer, 1}).ok()) return f;
    }
    (void)(*store)->Flush();
  }
  o.durability = Durability::kSync;
  Stopwatch open_timer;
  auto store = Store::Open(o, dir);
  f.open_ms = open_timer.Seconds() * 1000;
  if (!store.ok()) return f;
  // Probe once the background index load is done: steady state.
  while (!(*store)->Stats().index_ready) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  f.index_ready_ms = open_timer.Seconds() * 1000;
  const NamespaceId ns = NamespaceFingerprint(BenchSpec());
  std::mt19937_64 rng(1);
  std::vector<Prefix> cands(64);
  std::vector<double> us;
  for (uint32_t p = 0; p < probes; ++p) {
    // 63 misses and, for half the probes, a stored prefix at a random depth.
    for (auto& c : cands) c = NthPrefix(manifests + rng() % (1ull << 40));
    if (p % 2 == 0) cands[rng() % 64] = NthPrefix(rng() % manifests);
    Stopwatch t;
    auto r = (*store)->LongestPrefix(ns, cands);
    us.push_back(t.Seconds() * 1e6);
    if (!r.ok()) return f;
  }
  f.longest_p50_us = Percentile(us, 50);
  f.longest_p99_us = Percentile(us, 99);
  return f;
}

}  // namespace auxstore::bench
