// Pipelines through the C ABI: options and stats, write-behind snapshots,
// restores (with a callback, waiting, or through a handle).
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "auxstore/metrics.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"
#include "capi/c_restore_options.h"
#include "capi/c_restore_targets.h"
#include "capi/c_state_use.h"

using auxstore::Result;
using auxstore::Status;
using auxstore::capi::CheckRestore;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NotNull;
using auxstore::capi::RestoreClaims;
using auxstore::capi::StateUse;
using auxstore::capi::Targets;

namespace {

Status Snapshot(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                uint64_t token_count, const auxstore_snapshot_source_t* sources, size_t n,
                uint64_t stream, const auxstore_put_options_t* options,
                auxstore_snapshot_done_fn done = nullptr, void* done_arg = nullptr) {
  AUXSTORE_ASSIGN_OR_RETURN(const auto p, Live(pipeline, "pipeline"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
  if (n == 0) return Status::InvalidArgument("no snapshot sources (n is 0)");
  AUXSTORE_RETURN_IF_ERROR(NotNull(sources, "sources"));
  auxstore::SnapshotSources map;
  std::vector<StateUse> uses;  // held until the copies are enqueued
  for (size_t i = 0; i < n; ++i) {
    const std::string at = "sources[" + std::to_string(i) + "]";
    AUXSTORE_ASSIGN_OR_RETURN(StateUse u, StateUse::Begin(sources[i].state, at + ".state"));
    if (u->backend != p->backend) {
      return Status::InvalidArgument(at + ".state lives on another backend than the pipeline's");
    }
    const auxstore::SeqState* s = u->state.get();
    uses.push_back(std::move(u));
    if (!map.emplace(sources[i].layer, s).second) {
      return Status::InvalidArgument(at + ".layer " + std::to_string(sources[i].layer) +
                                     " repeats an earlier source's layer");
    }
  }
  auxstore::SnapshotOptions o;
  if (options != nullptr) {
    if (options->struct_size < sizeof(auxstore_put_options_t)) {
      return Status::InvalidArgument("options->struct_size is " +
                                     std::to_string(options->struct_size) +
                                     ", expected sizeof(auxstore_put_options_t)");
    }
    if (options->token_digest != nullptr) {
      auxstore::TokenDigest d;
      std::memcpy(d.bytes.data(), options->token_digest, 16);
      o.token_digest = d;
    }
    if (options->n_blocks > 0) {
      AUXSTORE_RETURN_IF_ERROR(NotNull(options->block_chain, "options->block_chain"));
    }
    for (size_t i = 0; i < options->n_blocks; ++i) {
      o.block_chain.push_back(auxstore::capi::ToPrefix(options->block_chain[i]));
    }
    o.block_size = options->block_size;
  }
  if (done != nullptr) {
    auxstore::Prefix pre = auxstore::capi::ToPrefix(prefix);
    o.done = [done, done_arg, pre](Status st) {
      done(done_arg, pre.bytes.data(), static_cast<int>(st.code()),
           st.ok() ? nullptr : st.message().c_str());
    };
  }
  return p->pipeline->Snapshot(ns, auxstore::capi::ToPrefix(prefix), token_count, map, stream,
                               std::move(o));
}

}  // namespace

extern "C" {

void auxstore_pipeline_options_init(auxstore_pipeline_options_t* options) {
  if (options == nullptr) return;
  const auxstore::PipelineOptions d;
  *options = {sizeof(auxstore_pipeline_options_t),
              d.staging_buffers,
              d.staging_bytes,
              d.io_threads,
              d.restore_read_ahead,
              d.snapshot_queue,
              d.snapshot_bytes};
}

int auxstore_pipeline_create_with(auxstore_t* db, auxstore_backend_t* backend,
                                  const auxstore_pipeline_options_t* options,
                                  auxstore_pipeline_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(auto d, Live(db, "db"));
    AUXSTORE_ASSIGN_OR_RETURN(auto b, Live(backend, "backend"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    auxstore::PipelineOptions o;
    if (options != nullptr) {
      if (options->struct_size < sizeof(auxstore_pipeline_options_t)) {
        return Status::InvalidArgument("options->struct_size is " +
                                       std::to_string(options->struct_size) +
                                       ": call auxstore_pipeline_options_init first");
      }
      o = {options->staging_buffers,    options->staging_bytes,  options->io_threads,
           options->restore_read_ahead, options->snapshot_queue, options->snapshot_bytes};
      if (o.staging_bytes < d->options.chunk_bytes) {
        return Status::InvalidArgument("options->staging_bytes " + std::to_string(o.staging_bytes) +
                                       " is below the store's chunk size " +
                                       std::to_string(d->options.chunk_bytes));
      }
    } else {
      // A staging buffer must hold one store chunk.
      o.staging_bytes = std::max<size_t>(o.staging_bytes, d->options.chunk_bytes);
    }
    AUXSTORE_ASSIGN_OR_RETURN(auto pipeline, auxstore::GpuPipeline::Create(*d->store, *b->gpu, o));
    auto p = std::make_shared<auxstore_pipeline_t>();
    p->db = std::move(d);
    p->backend = std::move(b);
    p->pipeline = std::move(pipeline);
    *out = auxstore::capi::NewHandle(std::move(p));
    return Status::Ok();
  });
}

int auxstore_pipeline_create(auxstore_t* db, auxstore_backend_t* backend, auxstore_pipeline_t** out,
                             char** errmsg) {
  return auxstore_pipeline_create_with(db, backend, nullptr, out, errmsg);
}

uint64_t auxstore_pipeline_stream(const auxstore_pipeline_t* pipeline) {
  const auto p = auxstore::capi::FindLive(pipeline);
  return p != nullptr ? p->pipeline->stream() : 0;
}

int auxstore_pipeline_stats(const auxstore_pipeline_t* pipeline, auxstore_pipeline_stats_t* out,
                            char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto p, Live(pipeline, "pipeline"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    static_assert(AUXSTORE_LATENCY_BUCKETS == auxstore::PipelineStats::kLatencyBuckets);
    static_assert(AUXSTORE_THROUGHPUT_BUCKETS == auxstore::PipelineStats::kThroughputBuckets);
    const auxstore::PipelineStats s = p->pipeline->stats();
    *out = {};
    out->restores_ok = s.restores_ok;
    out->restores_failed = s.restores_failed;
    out->restores_cancelled = s.restores_cancelled;
    out->restores_running = s.restores_running;
    out->bytes_restored = s.bytes_restored;
    out->snapshots_accepted = s.snapshots_accepted;
    out->snapshots_shed = s.snapshots_shed;
    out->snapshots_written = s.snapshots_written;
    out->snapshots_failed = s.snapshots_failed;
    out->bytes_snapshotted = s.bytes_snapshotted;
    out->staging_waits = s.staging_waits;
    std::memcpy(out->restore_latency_us, s.restore_latency_us, sizeof out->restore_latency_us);
    out->restore_latency_us_sum = s.restore_latency_us_sum;
    std::memcpy(out->restore_throughput_mibps, s.restore_throughput_mibps,
                sizeof out->restore_throughput_mibps);
    out->restore_throughput_mibps_sum = s.restore_throughput_mibps_sum;
    return Status::Ok();
  });
}

int auxstore_snapshot(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                      uint64_t token_count, const auxstore_snapshot_source_t* sources, size_t n,
                      uint64_t stream, char** errmsg) {
  return Guard(__func__, errmsg, [&] {
    return Snapshot(pipeline, ns, prefix, token_count, sources, n, stream, nullptr);
  });
}

int auxstore_snapshot_ex(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                         uint64_t token_count, const auxstore_snapshot_source_t* sources, size_t n,
                         uint64_t stream, const auxstore_put_options_t* options, char** errmsg) {
  return Guard(__func__, errmsg, [&] {
    return Snapshot(pipeline, ns, prefix, token_count, sources, n, stream, options);
  });
}

int auxstore_snapshot_with_done(auxstore_pipeline_t* pipeline, uint64_t ns,
                                const uint8_t prefix[16], uint64_t token_count,
                                const auxstore_snapshot_source_t* sources, size_t n,
                                uint64_t stream, const auxstore_put_options_t* options,
                                auxstore_snapshot_done_fn done, void* arg, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(reinterpret_cast<const void*>(done), "done"));
    return Snapshot(pipeline, ns, prefix, token_count, sources, n, stream, options, done, arg);
  });
}

int auxstore_pipeline_flush(auxstore_pipeline_t* pipeline, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto p, Live(pipeline, "pipeline"));
    return p->pipeline->Flush();
  });
}

// The pipeline goes here (waiting for its restores and snapshots) unless a
// restore handle still holds it (then with the last such handle).
void auxstore_pipeline_destroy(auxstore_pipeline_t* pipeline) {
  if (pipeline == nullptr) return;
  try {
    if (auxstore::capi::Take(pipeline) == nullptr) {
      auxstore::capi::ReportMisuse(__func__, pipeline, auxstore::capi::HandleKind::kPipeline);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

int auxstore_restore(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                     const auxstore_restore_target_t* targets, size_t n,
                     auxstore_restore_done_fn done, void* arg, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(reinterpret_cast<const void*>(done), "done"));
    Targets t;
    AUXSTORE_ASSIGN_OR_RETURN(const auto p, CheckRestore(pipeline, prefix, targets, n, &t));
    t.claims.Started(p->pipeline->StartRestore(
        ns, auxstore::capi::ToPrefix(prefix), std::move(t.map), {},
        t.claims.Wrap([done, arg](Status st) {
          done(arg, static_cast<int>(st.code()), st.ok() ? nullptr : st.message().c_str());
        })));
    return Status::Ok();
  });
}

int auxstore_restore_wait(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                          const auxstore_restore_target_t* targets, size_t n, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    Targets t;
    AUXSTORE_ASSIGN_OR_RETURN(const auto p, CheckRestore(pipeline, prefix, targets, n, &t));
    auto h = p->pipeline->StartRestore(ns, auxstore::capi::ToPrefix(prefix), std::move(t.map), {},
                                       t.claims.Wrap(nullptr));
    t.claims.Started(h);
    return h->Wait();
  });
}

int auxstore_metrics_text(auxstore_t* db, const auxstore_pipeline_t* pipeline, const char* labels,
                          char** text, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(text, "text"));
    if (db == nullptr && pipeline == nullptr) {
      return Status::InvalidArgument("db and pipeline are both NULL");
    }
    std::shared_ptr<auxstore_t> d;
    std::shared_ptr<auxstore_pipeline_t> p;
    if (db != nullptr) {
      AUXSTORE_ASSIGN_OR_RETURN(d, Live(db, "db"));
    }
    if (pipeline != nullptr) {
      AUXSTORE_ASSIGN_OR_RETURN(p, Live(pipeline, "pipeline"));
    }
    const std::string_view l = labels != nullptr ? labels : "";
    std::string out;
    if (d != nullptr) auxstore::AppendStoreMetrics(d->store->Stats(), l, &out);
    if (p != nullptr) auxstore::AppendPipelineMetrics(p->pipeline->stats(), l, &out);
    size_t size = 0;
    void* data = nullptr;
    AUXSTORE_RETURN_IF_ERROR(auxstore::capi::CopyOut(out.c_str(), out.size() + 1, &data, &size));
    *text = static_cast<char*>(data);
    return Status::Ok();
  });
}

void auxstore_restore_options_init(auxstore_restore_options_t* options) {
  if (options == nullptr) return;
  *options = {};
  options->struct_size = sizeof(auxstore_restore_options_t);
}

int auxstore_restore_start(auxstore_pipeline_t* pipeline, uint64_t ns, const uint8_t prefix[16],
                           const auxstore_restore_target_t* targets, size_t n,
                           const auxstore_restore_options_t* options,
                           auxstore_restore_handle_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    Targets t;
    AUXSTORE_ASSIGN_OR_RETURN(const auto p, CheckRestore(pipeline, prefix, targets, n, &t));
    auxstore::RestoreOptions o;
    auxstore::RestoreCallback done;
    if (options != nullptr) {
      AUXSTORE_RETURN_IF_ERROR(auxstore::capi::ToRestoreOptions(*options, &o));
      o.lease = options->lease;
      if (auto fn = options->on_layer) {
        void* arg = options->on_layer_arg;
        o.on_layer = [fn, arg](uint32_t layer) { fn(arg, layer); };
      }
      if (auto fn = options->done) {
        void* arg = options->done_arg;
        done = [fn, arg](Status st) {
          fn(arg, static_cast<int>(st.code()), st.ok() ? nullptr : st.message().c_str());
        };
      }
    }
    auto h = std::make_shared<auxstore_restore_handle_t>();
    h->pipeline = p;
    h->handle = p->pipeline->StartRestore(ns, auxstore::capi::ToPrefix(prefix), std::move(t.map), o,
                                          t.claims.Wrap(std::move(done)));
    t.claims.Started(h->handle);
    *out = auxstore::capi::NewHandle(std::move(h));
    return Status::Ok();
  });
}

int auxstore_restore_poll(const auxstore_restore_handle_t* handle) {
  const auto h = auxstore::capi::FindLive(handle);
  return h != nullptr ? (h->handle->done() ? 1 : 0) : -1;
}

int auxstore_restore_join(auxstore_restore_handle_t* handle, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto h, Live(handle, "handle"));
    return h->handle->Wait();
  });
}

void auxstore_restore_cancel(auxstore_restore_handle_t* handle) {
  if (handle == nullptr) return;
  try {
    if (const auto h = auxstore::capi::FindLive(handle)) {
      h->handle->Cancel();
    } else {
      auxstore::capi::ReportMisuse(__func__, handle, auxstore::capi::HandleKind::kRestore);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

int auxstore_restore_layer_done(const auxstore_restore_handle_t* handle, uint32_t layer) {
  const auto h = auxstore::capi::FindLive(handle);
  return h != nullptr && h->handle->LayerDone(layer) ? 1 : 0;
}

int auxstore_restore_wait_layer(auxstore_restore_handle_t* handle, uint32_t layer, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto h, Live(handle, "handle"));
    return h->handle->WaitLayer(layer);
  });
}

int auxstore_restore_stream_wait_layer(auxstore_restore_handle_t* handle, uint32_t layer,
                                       uint64_t stream, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto h, Live(handle, "handle"));
    return h->handle->StreamWaitLayer(layer, stream);
  });
}

int auxstore_restore_stream_wait_all(auxstore_restore_handle_t* handle, uint64_t stream,
                                     char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto h, Live(handle, "handle"));
    return h->handle->StreamWaitAll(stream);
  });
}

int auxstore_restore_layers_done(const auxstore_restore_handle_t* handle, uint32_t* layers,
                                 size_t capacity, size_t* n, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto h, Live(handle, "handle"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(n, "n"));
    if (capacity > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(layers, "layers"));
    const std::vector<uint32_t> done = h->handle->LayersDone();
    *n = done.size();
    if (done.size() > capacity) {
      return Status::OutOfRange(std::to_string(done.size()) + " layers are done; capacity is " +
                                std::to_string(capacity));
    }
    std::copy(done.begin(), done.end(), layers);
    return Status::Ok();
  });
}

void auxstore_restore_handle_release(auxstore_restore_handle_t* handle) {
  if (handle == nullptr) return;
  try {
    if (auxstore::capi::Take(handle) == nullptr) {
      auxstore::capi::ReportMisuse(__func__, handle, auxstore::capi::HandleKind::kRestore);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

}  // extern "C"
