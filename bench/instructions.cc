#include "bench/instructions.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"
#include "bench/instruction_counter.h"
#include "bench/measure.h"
#include "bench/store_contender.h"

namespace auxstore::bench {
namespace {

struct Region {
  std::string name;
  std::function<bool()> body;             // false: the region failed
  std::function<void()> prepare = [] {};  // before each count, not counted
};

// The host-backend restore of every snapshot, the pipeline and its targets
// made before the count starts (as in pipeline_contender.cc).
class HostRestore {
 public:
  HostRestore(Store& store, const Workload& w) : store_(store), w_(w) {
    auto gpu = CreateBackend(BackendKind::kHost);
    if (!gpu.ok()) return;
    gpu_ = std::move(*gpu);
    auto p = GpuPipeline::Create(store_, *gpu_, PipelineOptions{});
    if (!p.ok()) return;
    pipeline_ = std::move(*p);
  }
  ~HostRestore() { Release(); }
  // Fresh targets: a restore only writes into states nothing was written to.
  void Prepare() {
    Release();
    if (!gpu_) return;
    for (uint32_t i = 0; i < w_.snapshots * w_.layers; ++i) {
      auto st = OpaqueSeqState::Create(*gpu_, w_.layer_bytes);
      if (!st.ok()) return;
      states_.push_back(std::move(*st));
    }
  }
  bool Run() {
    if (states_.size() != size_t{w_.snapshots} * w_.layers) {
      std::fprintf(stderr, "host restore: no pipeline or targets\n");
      return false;
    }
    for (uint32_t s = 0; s < w_.snapshots; ++s) {
      RestoreTargets targets;
      for (uint32_t l = 0; l < w_.layers; ++l) targets[l] = states_[s * w_.layers + l].get();
      Status st =
          pipeline_->Restore(BenchNamespace(), BenchPrefix(s), targets, kDefaultStream).get();
      if (!st.ok()) {
        std::fprintf(stderr, "host restore: %s\n", st.ToString().c_str());
        return false;
      }
    }
    return true;
  }

 private:
  Store& store_;
  const Workload& w_;
  std::unique_ptr<GpuBackend> gpu_;
  std::unique_ptr<GpuPipeline> pipeline_;
  std::vector<std::unique_ptr<OpaqueSeqState>> states_;

  void Release() {
    for (auto& st : states_) (void)st->Release();
    states_.clear();
  }
};

}  // namespace

nlohmann::json CountInstructions(const std::string& dir, const Workload& w, int runs, bool print) {
  WorkloadData data(w);
  const uint64_t n = w.total_bytes();
  StoreContender writer(dir);
  nlohmann::json j;
  j["workload"] = w.name;
  j["bytes"] = n;
  if (writer.Write(data, Durability::kSync).seconds < 0) {
    j["error"] = "writing the store failed";
    return j;
  }
  Options o;
  o.background_maintenance = false;
  auto store = Store::Open(o, dir);
  if (!store.ok()) {
    j["error"] = "opening the store failed: " + store.error().ToString();
    return j;
  }
  const NamespaceId ns = BenchNamespace();
  HugeBuffer dst(w.layer_bytes);
  HugeBuffer copy_dst(n);
  HostRestore restore(**store, w);
  volatile uint64_t sink_hash = 0;
  auto each_layer = [&](const std::function<bool(uint32_t, uint32_t)>& f) {
    for (uint32_t s = 0; s < w.snapshots; ++s)
      for (uint32_t l = 0; l < w.layers; ++l)
        if (!f(s, l)) return false;
    return true;
  };
  const std::vector<Region> regions = {
      {"memcpy",
       [&] {
         // Layer by layer, as a restore copies.
         return each_layer([&](uint32_t s, uint32_t l) {
           auto src = data.Layer(s, l);
           std::memcpy(copy_dst.data() + (src.data() - data.All().data()), src.data(), src.size());
           return true;
         });
       }},
      {"memcpy in 256 KiB pieces",
       [&] {
         // The piece size of the reader's fused copy (format/envelope.cc):
         // glibc copies these with `rep movsb`, which callgrind counts per byte.
         constexpr size_t kPiece = 256u << 10;
         const auto all = data.All();
         for (size_t off = 0; off < all.size(); off += kPiece) {
           std::memcpy(copy_dst.data() + off, all.data() + off, std::min(kPiece, all.size() - off));
         }
         return true;
       }},
      {"xxh3-64",
       [&] {
         return each_layer([&](uint32_t s, uint32_t l) {
           auto src = data.Layer(s, l);
           sink_hash = sink_hash + XXH3_64bits(src.data(), src.size());
           return true;
         });
       }},
      {"ReadLayerInto (warm)",
       [&] {
         return each_layer([&](uint32_t s, uint32_t l) {
           return (*store)->ReadLayerInto(ns, BenchPrefix(s), l, dst.span()).ok();
         });
       }},
      {"ReadLayer, sink copies nothing (warm)",
       [&] {
         return each_layer([&](uint32_t s, uint32_t l) {
           return (*store)
               ->ReadLayer(ns, BenchPrefix(s), l, [](uint64_t, ByteSpan) { return Status::Ok(); })
               .ok();
         });
       }},
      {"pipeline restore, host backend (warm)", [&] { return restore.Run(); },
       [&] { restore.Prepare(); }},
  };
  // Warm: the store's files in the page cache, every buffer faulted in.
  for (const Region& r : regions) {
    r.prepare();
    (void)r.body();
  }

  std::map<std::string, std::vector<double>> counts;
  std::string unavailable;
  for (int run = 0; run < runs; ++run) {
    for (const Region& r : regions) {
      r.prepare();
      InstructionCounter counter;
      // The dump's name carries the bytes (instructions_callgrind.py divides).
      const std::string why = counter.Start(w.name + " | " + r.name + " | " + std::to_string(n));
      const bool ok = r.body();
      const auto count = counter.Stop();
      if (!ok) {
        j["error"] = r.name + " failed";
        if (print)
          std::printf("\n## %s: %s\n", w.name.c_str(), j["error"].get<std::string>().c_str());
        return j;
      }
      if (!why.empty()) unavailable = why;
      if (count) counts[r.name].push_back(static_cast<double>(*count));
    }
  }
  if (InstructionCounter::UnderValgrind()) {
    j["counted_by"] = "callgrind dumps (bench/instructions_callgrind.py)";
  } else if (!unavailable.empty()) {
    j["counted_by"] = nullptr;
    j["unavailable"] = unavailable;
  } else {
    j["counted_by"] = "perf_event_open instructions:u, every thread";
  }
  const double memcpy_per_byte =
      counts.count("memcpy") ? Summarize(counts["memcpy"]).median / static_cast<double>(n) : 0;
  for (auto& [name, v] : counts) {
    const double per_byte = Summarize(v).median / static_cast<double>(n);
    j["instructions_per_byte"][name] = per_byte;
    if (memcpy_per_byte > 0) j["per_byte_vs_memcpy"][name] = per_byte / memcpy_per_byte;
  }
  if (print) {
    std::printf("\n## %s — %.0f MiB, instructions per byte (median of %d)\n\n", w.name.c_str(),
                static_cast<double>(n) / 1048576.0, runs);
    if (j.contains("instructions_per_byte")) {
      std::printf("| region | instructions / byte | x memcpy |\n| --- | --- | --- |\n");
      for (auto& [name, v] : j["instructions_per_byte"].items()) {
        std::printf("| %s | %.4f | %.2f |\n", name.c_str(), v.get<double>(),
                    j["per_byte_vs_memcpy"].value(name, 0.0));
      }
    } else if (InstructionCounter::UnderValgrind()) {
      std::printf("counted by callgrind: bench/instructions_callgrind.py reads its dumps\n");
    } else {
      std::printf("not counted: %s\n", unavailable.c_str());
    }
  }
  return j;
}

}  // namespace auxstore::bench
