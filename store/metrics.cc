// The store's half of the Prometheus exposition (include/auxstore/metrics.h).
#include "auxstore/metrics.h"

#include <cinttypes>
#include <cstdio>

#include "store/prometheus_text.h"

namespace auxstore {

std::string EscapePrometheusLabel(std::string_view value) {
  std::string out;
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void AppendStoreMetrics(const StoreStats& s, std::string_view labels, std::string* out) {
  using prom::Metric;
  Metric m(out, labels);
  m.Gauge("auxstore_snapshots", "Visible snapshots.", s.snapshots);
  m.Gauge("auxstore_payload_bytes", "Layer bytes of the visible snapshots (capacity used).",
          s.payload_bytes);
  m.Gauge("auxstore_capacity_bytes", "The byte budget (0: unlimited).", s.capacity_bytes);
  m.Counter("auxstore_lookups_total", "Lookups (LongestPrefix*, GetManifest) by result.",
            {{"result=\"hit\"", s.hits}, {"result=\"miss\"", s.misses}});
  m.Counter("auxstore_puts_total", "Snapshots written by this handle.", s.puts);
  m.Counter("auxstore_duplicate_puts_total", "Puts of a prefix already stored (no-ops).",
            s.duplicate_puts);
  m.Counter("auxstore_written_bytes_total", "Layer bytes written by this handle.", s.bytes_written);
  m.Counter("auxstore_read_bytes_total", "Layer bytes read and verified by this handle.",
            s.bytes_read);
  m.Counter("auxstore_reads_repeated_total",
            "Repeats of reads into caller memory that met their snapshot replaced.",
            s.reads_repeated);
  m.Counter("auxstore_evictions_total", "Snapshots evicted for the byte budget.", s.evictions);
  m.Counter("auxstore_expirations_total", "Snapshots expired by their TTL.", s.expirations);
  m.Counter("auxstore_quarantines_total",
            "Snapshots quarantined for corruption (persisted across opens).", s.quarantines);
  m.Counter("auxstore_orphans_removed_total", "Record groups without a manifest removed.",
            s.orphans_removed);
  m.Gauge("auxstore_commit_seq", "Commits recovered and made since the store was created.",
          s.commit_seq);
  m.Gauge("auxstore_durable_watermark", "The last commit known durable.", s.durable_watermark);
  m.Gauge("auxstore_lost_commits_at_open",
          "Commits the open found lost and accepted (accept_data_loss).", s.lost_commits_at_open);
  m.Gauge("auxstore_leases", "Live leases.", s.leases);
  m.Gauge("auxstore_fenced", "1 after a failed write: the handle writes nothing until reopened.",
          s.fenced ? 1 : 0);
  m.Gauge("auxstore_index_ready", "1 once the background LRU index has loaded.",
          s.index_ready ? 1 : 0);
  if (!s.shared) return;  // the shared tier's (docs/shared-tier.md), when there is one
  m.Counter("auxstore_shared_uploads_total", "Snapshots committed to the pool (or found there).",
            s.shared_uploads);
  m.Counter("auxstore_shared_pages_total", "Page objects of this handle's uploads, by outcome.",
            {{"result=\"stored\"", s.shared_pages_stored},
             {"result=\"present\"", s.shared_pages_present}});
  m.Counter("auxstore_shared_upload_failures_total",
            "Upload attempts that failed (retried while queued).", s.shared_upload_failures);
  m.Counter("auxstore_shared_shed_total",
            "Write-behind snapshots not uploaded: the upload queue was full.", s.shared_shed);
  m.Gauge("auxstore_shared_queued", "Write-behind snapshots waiting for upload.", s.shared_queued);
  m.Counter("auxstore_shared_restores_total",
            "Snapshots restored from the pool into the local store.", s.shared_restores);
  m.Counter("auxstore_shared_corruptions_total",
            "Pool objects found damaged (their snapshots quarantined).", s.shared_corruptions);
}

}  // namespace auxstore
