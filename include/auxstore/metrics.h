// Prometheus text exposition (format 0.0.4) of a store's and a pipeline's
// counters, gauges and histograms: what `auxstore stats --prometheus`, the C
// ABI's auxstore_metrics_text and the Python collector export. Every metric
// is listed, with its type and meaning, in docs/metrics.md.
#pragma once

#include <string>
#include <string_view>

#include "auxstore/store.h"

namespace auxstore {

struct PipelineStats;

// Appends the samples (with their # HELP and # TYPE lines) to `out`.
// `labels`, when not empty, is put on every sample as it is: `a="x",b="y"`
// (values escaped by the caller with EscapePrometheusLabel).
void AppendStoreMetrics(const StoreStats& stats, std::string_view labels, std::string* out);
void AppendPipelineMetrics(const PipelineStats& stats, std::string_view labels, std::string* out);

// A label value with \, " and newlines escaped as the format requires.
std::string EscapePrometheusLabel(std::string_view value);

}  // namespace auxstore
