// The pipeline's half of the Prometheus exposition (include/auxstore/metrics.h).
#include "auxstore/gpu_pipeline.h"
#include "auxstore/metrics.h"
#include "store/prometheus_text.h"

namespace auxstore {

void AppendPipelineMetrics(const PipelineStats& s, std::string_view labels, std::string* out) {
  prom::Metric m(out, labels);
  m.Counter(
      "auxstore_restores_total", "Restores completed, by result (failed includes cancelled).",
      {{"result=\"ok\"", double(s.restores_ok)}, {"result=\"failed\"", double(s.restores_failed)}});
  m.Counter("auxstore_restores_cancelled_total", "Restores that ended cancelled.",
            s.restores_cancelled);
  m.Gauge("auxstore_restores_running", "Restores in flight.", s.restores_running);
  m.Counter("auxstore_restored_bytes_total", "Layer bytes of the restores that succeeded.",
            s.bytes_restored);
  m.Counter("auxstore_write_behind_snapshots_total", "Write-behind snapshots, by outcome.",
            {{"result=\"accepted\"", double(s.snapshots_accepted)},
             {"result=\"shed\"", double(s.snapshots_shed)},
             {"result=\"written\"", double(s.snapshots_written)},
             {"result=\"failed\"", double(s.snapshots_failed)}});
  m.Counter("auxstore_snapshotted_bytes_total", "Layer bytes of the snapshots written.",
            s.bytes_snapshotted);
  m.Counter("auxstore_staging_waits_total", "Chunk reads that waited for a free staging buffer.",
            s.staging_waits);
  double latency_bounds[PipelineStats::kLatencyBuckets];
  for (size_t i = 0; i < PipelineStats::kLatencyBuckets; ++i) {
    latency_bounds[i] = static_cast<double>(uint64_t{2} << i) * 1e-6;  // [2^i, 2^(i+1)) us
  }
  m.Histogram("auxstore_restore_latency_seconds",
              "Restore latency, start to completion, of the restores that succeeded.",
              s.restore_latency_us, latency_bounds,
              static_cast<double>(s.restore_latency_us_sum) * 1e-6);
  double throughput_bounds[PipelineStats::kThroughputBuckets];
  for (size_t i = 0; i < PipelineStats::kThroughputBuckets; ++i) {
    throughput_bounds[i] = static_cast<double>(uint64_t{2} << i) * (1 << 20);  // bytes/s
  }
  m.Histogram("auxstore_restore_throughput_bytes_per_second",
              "Layer bytes per second of each restore that succeeded.", s.restore_throughput_mibps,
              throughput_bounds, s.restore_throughput_mibps_sum * (1 << 20));
}

}  // namespace auxstore
