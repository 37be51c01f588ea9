#include "bench/chain_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <span>
#include <thread>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/maintenance.h"
#include "auxstore/store.h"
#include "bench/baselines.h"
#include "bench/measure.h"
#include "tests/support/test_util.h"

namespace auxstore::bench {
namespace {

constexpr uint32_t kIndexHeadDim = 128;  // DSA: 256 + 256 + 1 = 513 bytes per token
constexpr uint64_t kRowBytes = 4 * kIndexHeadDim + 1;

// A run of tokens whose rows (per layer: DSA k_normed, gate, valid) are
// generated once; a sequence is a list of segments (a shared prompt, then
// its own turns).
struct Segment {
  uint64_t tokens = 0;
  std::vector<std::vector<uint8_t>> k, g, v;  // [layer]
};

struct Snapshot {
  uint32_t sequence = 0;
  uint64_t tokens = 0;  // the first `tokens` of the sequence
};

struct ChainWorkload {
  std::string name;
  uint32_t layers = 0;
  std::vector<Segment> segments;
  std::vector<std::vector<uint32_t>> sequences;  // segment ids
  std::vector<Snapshot> snapshots;               // in put order
  uint64_t unique_bytes = 0;                     // distinct rows, bytes

  uint64_t SequenceTokens(uint32_t s) const {
    uint64_t n = 0;
    for (uint32_t id : sequences[s]) n += segments[id].tokens;
    return n;
  }
};

Segment MakeSegment(uint64_t tokens, uint32_t layers, uint64_t seed) {
  Segment s;
  s.tokens = tokens;
  for (uint32_t l = 0; l < layers; ++l) {
    const uint64_t seedl = seed * 1000 + l;
    s.k.emplace_back(tokens * 2 * kIndexHeadDim);
    s.g.emplace_back(tokens * 2 * kIndexHeadDim);
    s.v.emplace_back(tokens);
    FillRandom(s.k.back().data(), s.k.back().size(), seedl * 3);
    FillRandom(s.g.back().data(), s.g.back().size(), seedl * 3 + 1);
    FillRandom(s.v.back().data(), s.v.back().size(), seedl * 3 + 2);
  }
  return s;
}

std::vector<ChainWorkload> Workloads(uint32_t scale) {
  std::vector<ChainWorkload> out;
  {  // (a)
    ChainWorkload w{"a: 4096 tok x 24 layers, a snapshot every 256 tokens", 24};
    w.segments.push_back(MakeSegment(4096 / scale, w.layers, 1));
    w.sequences = {{0}};
    for (uint64_t t = 256 / scale; t <= 4096 / scale; t += 256 / scale)
      w.snapshots.push_back({0, t});
    out.push_back(std::move(w));
  }
  {  // (b)
    ChainWorkload w{"b: 8 turns x 4096 tok x 60 layers", 60};
    w.segments.push_back(MakeSegment(8 * 4096 / scale, w.layers, 2));
    w.sequences = {{0}};
    for (uint64_t t = 1; t <= 8; ++t) w.snapshots.push_back({0, t * 4096 / scale});
    out.push_back(std::move(w));
  }
  {  // (c)
    ChainWorkload w{"c: 100 seqs x (2048-tok shared prompt + 256 own) x 24 layers", 24};
    w.segments.push_back(MakeSegment(2048 / scale, w.layers, 3));
    for (uint32_t s = 0; s < 100; ++s) {
      w.segments.push_back(MakeSegment(256 / scale, w.layers, 100 + s));
      w.sequences.push_back({0, s + 1});
      w.snapshots.push_back({s, (2048 + 256) / scale});
    }
    out.push_back(std::move(w));
  }
  for (ChainWorkload& w : out) {
    for (const Segment& s : w.segments) w.unique_bytes += s.tokens * kRowBytes * w.layers;
  }
  return out;
}

NamespaceSpec ChainSpec() {
  NamespaceSpec s;
  s.model_id = "bench-chains";
  s.dsa = {kIndexHeadDim, 8 * 4096};
  return s;
}

// The blob of layer `l` of the first `tokens` tokens of sequence `seq`.
std::vector<uint8_t> LayerBlobOf(const ChainWorkload& w, uint32_t seq, uint32_t l,
                                 uint64_t tokens) {
  std::vector<uint8_t> k, g, v;
  k.reserve(tokens * 2 * kIndexHeadDim);
  g.reserve(tokens * 2 * kIndexHeadDim);
  v.reserve(tokens);
  uint64_t left = tokens;
  for (uint32_t id : w.sequences[seq]) {
    const Segment& s = w.segments[id];
    const uint64_t n = std::min(left, s.tokens);
    k.insert(k.end(), s.k[l].begin(), s.k[l].begin() + n * 2 * kIndexHeadDim);
    g.insert(g.end(), s.g[l].begin(), s.g[l].begin() + n * 2 * kIndexHeadDim);
    v.insert(v.end(), s.v[l].begin(), s.v[l].begin() + n);
    left -= n;
    if (left == 0) break;
  }
  return EncodeDsaBlob(tokens, kIndexHeadDim, k, g, v).value();
}

std::vector<uint32_t> TokensOf(const ChainWorkload& w, uint32_t seq, uint64_t tokens) {
  std::vector<uint32_t> t;
  for (uint32_t id : w.sequences[seq]) {
    for (uint64_t i = 0; i < w.segments[id].tokens && t.size() < tokens; ++i)
      t.push_back(id * 1000003u + static_cast<uint32_t>(i));
  }
  return t;
}

Prefix SnapshotPrefix(size_t i) {
  Prefix p;
  for (int b = 0; b < 8; ++b) p.bytes[b] = static_cast<uint8_t>(i >> (8 * b));
  p.bytes[15] = 0xC4;
  return p;
}

struct LayoutFigures {
  double write_seconds = 0;
  uint64_t disk_bytes = 0, device_write_bytes = 0, store_unique = 0, store_payload = 0;
  double restore_seconds = 0;  // cold, the longest snapshot (median)
  uint64_t restore_bytes = 0;
  bool ok = false;
};

LayoutFigures RunLayout(const ChainWorkload& w, const ChainConfig& c, bool paged,
                        const std::string& dir) {
  LayoutFigures f;
  std::filesystem::remove_all(dir);
  Options o;
  o.background_maintenance = false;
  {
    auto store = Store::Open(o, dir);
    if (!store.ok()) return f;
    const NamespaceId ns = (*store)->RegisterNamespace(ChainSpec()).value();
    const uint64_t written_before = ProcessWriteBytes();
    for (size_t i = 0; i < w.snapshots.size(); ++i) {
      const Snapshot& s = w.snapshots[i];
      std::vector<std::vector<uint8_t>> blobs;  // built untimed
      std::vector<LayerBlob> layers;
      for (uint32_t l = 0; l < w.layers; ++l)
        blobs.push_back(LayerBlobOf(w, s.sequence, l, s.tokens));
      for (uint32_t l = 0; l < w.layers; ++l) layers.push_back({l, Kind::kDsa, blobs[l]});
      const auto chain = PrefixHashes(TokensOf(w, s.sequence, s.tokens), c.block, 0);
      PutOptions put;
      if (paged) {
        put.block_chain = chain;
        put.block_size = c.block;
      }
      Stopwatch t;
      Status st = (*store)->PutSnapshot(ns, SnapshotPrefix(i), s.tokens, layers, put);
      f.write_seconds += t.Seconds();
      if (!st.ok()) {
        std::fprintf(stderr, "put: %s\n", st.ToString().c_str());
        return f;
      }
    }
    const StoreStats stats = (*store)->Stats();
    f.store_unique = stats.unique_bytes;
    f.store_payload = stats.payload_bytes;
    f.device_write_bytes = ProcessWriteBytes() - written_before;
  }
  f.disk_bytes = testing::DirBytes(dir);
  f.ok = true;
  return f;
}

// The snapshot a cold restore reads: the last of the longest.
size_t LongestSnapshot(const ChainWorkload& w) {
  size_t longest = 0;
  for (size_t i = 0; i < w.snapshots.size(); ++i)
    if (w.snapshots[i].tokens > w.snapshots[longest].tokens) longest = i;
  return longest;
}

// Seconds for one cold read of every layer of the longest snapshot, or -1:
// on `bufs.size()` lanes (threads), lane j reading layers j, j + lanes, ...
// into its own buffer, as a restore pipeline's lanes do.
double ColdRestore(const ChainWorkload& w, Store& store, const std::string& dir,
                   std::vector<std::unique_ptr<HugeBuffer>>& bufs, uint64_t* bytes) {
  const NamespaceId ns = NamespaceFingerprint(ChainSpec());
  const size_t longest = LongestSnapshot(w);
  const uint32_t lanes = static_cast<uint32_t>(bufs.size());
  DropPageCache(dir);
  std::vector<uint64_t> lane_bytes(lanes, 0);
  std::vector<Status> lane_status(lanes);
  auto lane = [&](uint32_t j) {
    HugeBuffer& buf = *bufs[j];
    for (uint32_t l = j; l < w.layers && lane_status[j].ok(); l += lanes) {
      lane_status[j] =
          store.ReadLayer(ns, SnapshotPrefix(longest), l, [&](uint64_t off, ByteSpan b) {
            std::memcpy(buf.data() + off, b.data(), b.size());
            lane_bytes[j] += b.size();
            return Status::Ok();
          });
    }
  };
  Stopwatch t;
  std::vector<std::thread> threads;
  for (uint32_t j = 1; j < lanes; ++j) threads.emplace_back(lane, j);
  lane(0);
  for (std::thread& th : threads) th.join();
  const double seconds = t.Seconds();
  *bytes = 0;
  for (uint32_t j = 0; j < lanes; ++j) {
    if (!lane_status[j].ok()) {
      std::fprintf(stderr, "restore: %s\n", lane_status[j].ToString().c_str());
      return -1;
    }
    *bytes += lane_bytes[j];
  }
  return seconds;
}

// Cold restores of every layout, alternating (whole, paged, compacted,
// whole, ...) so the machine's noise falls on all alike: one lane (the
// figures), then kLanes lanes (the ratio only: does reading several layers
// at once, and so several owners' streams, close the paged layout's gap?).
// `ratios[i]` / `lane_ratios[i]`: whole's time over layout i's, per run.
constexpr uint32_t kLanes = 4;

void RestoreAll(const ChainWorkload& w, const ChainConfig& c,
                std::span<const std::pair<std::string, LayoutFigures*>> layouts,
                std::vector<std::vector<double>>* ratios,
                std::vector<std::vector<double>>* lane_ratios) {
  Options o;
  o.background_maintenance = false;
  o.read_only = true;
  std::vector<std::unique_ptr<Store>> stores;
  auto fail = [&] {
    for (const auto& [dir, f] : layouts) f->ok = false;
  };
  for (const auto& [dir, f] : layouts) {
    auto s = Store::Open(o, dir);
    if (!s.ok()) return fail();
    stores.push_back(std::move(*s));
  }
  (void)RawReadTreeCold(c.dir);  // settle freshly written blocks (see SettleColdReads)
  const size_t layer_bytes = 16 + w.snapshots[LongestSnapshot(w)].tokens * kRowBytes;
  std::vector<std::unique_ptr<HugeBuffer>> one, bufs;
  one.push_back(std::make_unique<HugeBuffer>(layer_bytes));
  for (uint32_t j = 0; j < kLanes; ++j) bufs.push_back(std::make_unique<HugeBuffer>(layer_bytes));
  const size_t n = layouts.size();
  std::vector<std::vector<double>> times(n);
  ratios->assign(n, {});
  lane_ratios->assign(n, {});
  uint64_t lane_bytes = 0;
  for (int r = 0; r < c.runs; ++r) {
    std::vector<double> t(n), lanes(n);
    for (size_t i = 0; i < n; ++i)
      t[i] = ColdRestore(w, *stores[i], layouts[i].first, one, &layouts[i].second->restore_bytes);
    for (size_t i = 0; i < n; ++i)
      lanes[i] = ColdRestore(w, *stores[i], layouts[i].first, bufs, &lane_bytes);
    for (size_t i = 0; i < n; ++i) {
      if (t[i] < 0 || lanes[i] < 0) return fail();
    }
    for (size_t i = 0; i < n; ++i) {
      times[i].push_back(t[i]);
      (*ratios)[i].push_back(t[0] / t[i]);
      (*lane_ratios)[i].push_back(lanes[0] / lanes[i]);
    }
  }
  for (size_t i = 0; i < n; ++i) layouts[i].second->restore_seconds = Summarize(times[i]).median;
}

// The paged store at `from` copied to `to` and compacted (its chains laid
// out as one stream each, CompactOptions::relayout): what an operator's
// `auxstore compact` leaves. Its write figures are the compaction's.
LayoutFigures Compacted(const LayoutFigures& paged, const std::string& from,
                        const std::string& to) {
  LayoutFigures f = paged;
  f.ok = false;
  std::filesystem::remove_all(to);
  std::error_code ec;
  std::filesystem::copy(from, to, std::filesystem::copy_options::recursive, ec);
  if (ec) return f;
  Stopwatch t;
  auto r = CompactStoreAt(to, {});
  f.write_seconds = t.Seconds();
  if (!r.ok()) {
    std::fprintf(stderr, "compact: %s\n", r.status().ToString().c_str());
    return f;
  }
  f.device_write_bytes = r->relaid_bytes;
  f.disk_bytes = testing::DirBytes(to);
  f.ok = true;
  return f;
}

nlohmann::json FiguresJson(const ChainWorkload& w, const LayoutFigures& f) {
  return {{"write_seconds", f.write_seconds},
          {"disk_bytes", f.disk_bytes},
          {"disk_per_unique", static_cast<double>(f.disk_bytes) / w.unique_bytes},
          {"device_write_bytes", f.device_write_bytes},
          {"write_amp_per_unique", static_cast<double>(f.device_write_bytes) / w.unique_bytes},
          {"store_unique_bytes", f.store_unique},
          {"store_payload_bytes", f.store_payload},
          {"cold_restore_seconds", f.restore_seconds},
          {"cold_restore_gbps", f.restore_bytes / f.restore_seconds / 1e9},
          {"ok", f.ok}};
}

}  // namespace

nlohmann::json RunChainWorkloads(const ChainConfig& c, bool quiet) {
  nlohmann::json out = nlohmann::json::array();
  for (const ChainWorkload& w : Workloads(std::max<uint32_t>(1, c.scale))) {
    if (!c.only.empty() && w.name.find(c.only) == std::string::npos) continue;
    uint64_t logical = 0;
    for (const Snapshot& s : w.snapshots) logical += s.tokens * kRowBytes * w.layers;
    LayoutFigures whole = RunLayout(w, c, false, c.dir + "/whole");
    LayoutFigures paged = RunLayout(w, c, true, c.dir + "/paged");
    LayoutFigures compacted = Compacted(paged, c.dir + "/paged", c.dir + "/compacted");
    const std::pair<std::string, LayoutFigures*> layouts[] = {
        {c.dir + "/whole", &whole}, {c.dir + "/paged", &paged}, {c.dir + "/compacted", &compacted}};
    std::vector<std::vector<double>> ratios, lane_ratios;
    if (whole.ok && paged.ok && compacted.ok) RestoreAll(w, c, layouts, &ratios, &lane_ratios);
    for (const auto& [dir, f] : layouts) std::filesystem::remove_all(dir);
    auto median = [](const std::vector<std::vector<double>>& v, size_t i) {
      return v.size() > i && !v[i].empty() ? Summarize(v[i]).median : 0.0;
    };
    auto range = [](const std::vector<std::vector<double>>& v, size_t i) {
      if (v.size() <= i || v[i].empty()) return std::pair{0.0, 0.0};
      return std::pair{Summarize(v[i]).min, Summarize(v[i]).max};
    };
    const double restore_ratio = median(ratios, 1), lanes_ratio = median(lane_ratios, 1);
    const double compacted_ratio = median(ratios, 2), compacted_lanes = median(lane_ratios, 2);
    nlohmann::json j = {
        {"name", w.name},
        {"snapshots", w.snapshots.size()},
        {"unique_bytes", w.unique_bytes},
        {"logical_bytes", logical},
        {"block_tokens", c.block},
        {"whole", FiguresJson(w, whole)},
        {"paged", FiguresJson(w, paged)},
        {"paged_compacted", FiguresJson(w, compacted)},
        {"ratios",
         {{"write_time_paged_over_whole", paged.write_seconds / whole.write_seconds},
          {"cold_restore_paged_over_whole", restore_ratio},
          {"cold_restore_paged_over_whole_lanes", lanes_ratio},
          {"cold_restore_compacted_over_whole", compacted_ratio},
          {"cold_restore_compacted_over_whole_lanes", compacted_lanes},
          {"lanes", kLanes}}}};
    out.push_back(j);
    if (quiet) continue;
    std::printf(
        "\n## %s\n\n%zu snapshots, unique %.1f MiB, logical %.1f MiB, pages of %u tokens\n\n",
        w.name.c_str(), w.snapshots.size(), w.unique_bytes / 1048576.0, logical / 1048576.0,
        c.block);
    std::printf(
        "| layout | write s | disk / unique | write amp / unique | cold restore GB/s |\n"
        "| --- | --- | --- | --- | --- |\n");
    for (const auto& [name, f] :
         {std::pair{"whole", &whole}, std::pair{"paged", &paged},
          std::pair{"paged, compacted (write: the compaction's)", &compacted}}) {
      std::printf("| %s | %.3f | %.3f | %.3f | %.3f |\n", name, f->write_seconds,
                  static_cast<double>(f->disk_bytes) / w.unique_bytes,
                  static_cast<double>(f->device_write_bytes) / w.unique_bytes,
                  f->restore_bytes / f->restore_seconds / 1e9);
    }
    std::printf(
        "\nwrite time paged / whole %.3f; cold restore throughput paged / whole %.3f "
        "(median of %zu alternating runs, [%.3f, %.3f]); compacted / whole %.3f ([%.3f, "
        "%.3f])%s\n",
        paged.write_seconds / whole.write_seconds, restore_ratio,
        ratios.empty() ? size_t{0} : ratios[0].size(), range(ratios, 1).first,
        range(ratios, 1).second, compacted_ratio, range(ratios, 2).first, range(ratios, 2).second,
        whole.ok && paged.ok && compacted.ok ? "" : " (A RUN FAILED)");
    if (!lane_ratios.empty()) {
      std::printf("on %u lanes: paged / whole %.3f, compacted / whole %.3f (medians)\n", kLanes,
                  lanes_ratio, compacted_lanes);
    }
  }
  return out;
}

}  // namespace auxstore::bench
