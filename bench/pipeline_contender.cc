#include "bench/pipeline_contender.h"

#include <memory>
#include <vector>

#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"
#include "bench/measure.h"
#include "bench/store_contender.h"

namespace auxstore::bench {

PipelineRestore RestoreThroughPipeline(const std::string& store_dir, const WorkloadData& data,
                                       bool cold) {
  PipelineRestore r;
  Options o;
  o.background_maintenance = false;
  auto store = Store::Open(o, store_dir);
  auto gpu = CreateBackend(BackendKind::kHost);
  if (!store.ok() || !gpu.ok()) return r;
  PipelineOptions po;
  r.staging_bound_bytes = po.staging_buffers * po.staging_bytes;
  auto pipeline = GpuPipeline::Create(**store, **gpu, po);
  if (!pipeline.ok()) return r;
  const Workload& w = data.workload();
  // Every target exists (and is resident) before the clock starts.
  std::vector<std::unique_ptr<OpaqueSeqState>> states;
  for (uint32_t i = 0; i < w.snapshots * w.layers; ++i) {
    auto st = OpaqueSeqState::Create(**gpu, w.layer_bytes);
    if (!st.ok()) return r;
    states.push_back(std::move(*st));
  }
  if (cold) DropPageCache(store_dir);
  const uint64_t rss_before = RssBytes();
  ResetPeakRss();
  const NamespaceId ns = BenchNamespace();
  Stopwatch t;
  for (uint32_t s = 0; s < w.snapshots; ++s) {
    RestoreTargets targets;
    for (uint32_t l = 0; l < w.layers; ++l) targets[l] = states[s * w.layers + l].get();
    if (!(*pipeline)->Restore(ns, BenchPrefix(s), targets, kDefaultStream).get().ok()) return r;
  }
  r.seconds = t.Seconds();
  const uint64_t peak = PeakRssBytes();
  r.peak_rss_growth_bytes = peak > rss_before ? peak - rss_before : 0;
  for (auto& st : states) (void)st->Release();
  return r;
}

}  // namespace auxstore::bench
