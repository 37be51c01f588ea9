// auxstore.Pipeline's registration: PipelineStats, the class and its
// construction, stats, flush, write-behind snapshots, and the Prometheus text
// exposition. Restores are in restore_bind.cc.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "common.h"

namespace auxpy {

namespace {

py::dict PipelineStatsDict(const auxstore_pipeline_stats_t& s) {
  py::dict d;
#define AUXPY_FIELD(f) d[#f] = s.f;
  AUXPY_FIELD(restores_ok)
  AUXPY_FIELD(restores_failed)
  AUXPY_FIELD(restores_cancelled)
  AUXPY_FIELD(restores_running)
  AUXPY_FIELD(bytes_restored)
  AUXPY_FIELD(snapshots_accepted)
  AUXPY_FIELD(snapshots_shed)
  AUXPY_FIELD(snapshots_written)
  AUXPY_FIELD(snapshots_failed)
  AUXPY_FIELD(bytes_snapshotted)
  AUXPY_FIELD(staging_waits)
  AUXPY_FIELD(restore_latency_us_sum)
  AUXPY_FIELD(restore_throughput_mibps_sum)
#undef AUXPY_FIELD
  d["restore_latency_us"] =
      std::vector<uint64_t>(s.restore_latency_us, s.restore_latency_us + AUXSTORE_LATENCY_BUCKETS);
  d["restore_throughput_mibps"] = std::vector<uint64_t>(
      s.restore_throughput_mibps, s.restore_throughput_mibps + AUXSTORE_THROUGHPUT_BUCKETS);
  return d;
}

std::string MetricsText(const std::shared_ptr<Store>& store,
                        const std::shared_ptr<Pipeline>& pipeline, py::handle labels) {
  const std::string l = ToLabels(labels);
  CheckNoNul(l, "labels");
  char* text = nullptr;
  {
    py::gil_scoped_release release;
    std::shared_lock<std::shared_mutex> sl, pl;
    if (store) sl = store->LockOpen();
    if (pipeline) pl = pipeline->LockOpen();
    auxstore_t* db = store ? store->raw() : nullptr;
    auxstore_pipeline_t* p = pipeline ? pipeline->raw() : nullptr;
    Check([&](char** e) {
      return auxstore_metrics_text(db, p, l.empty() ? nullptr : l.c_str(), &text, e);
    });
  }
  std::string out(text);
  auxstore_free(text);
  return out;
}

}  // namespace

void RegisterPipeline(py::module_& m) {
  py::class_<auxstore_pipeline_stats_t>(m, "PipelineStats", "auxstore_pipeline_stats_t.")
      .def_readonly("restores_ok", &auxstore_pipeline_stats_t::restores_ok,
                    "Restores that succeeded.")
      .def_readonly("restores_failed", &auxstore_pipeline_stats_t::restores_failed,
                    "Restores that failed (cancelled ones included).")
      .def_readonly("restores_cancelled", &auxstore_pipeline_stats_t::restores_cancelled,
                    "Restores that ended cancelled.")
      .def_readonly("restores_running", &auxstore_pipeline_stats_t::restores_running,
                    "Restores in flight.")
      .def_readonly("bytes_restored", &auxstore_pipeline_stats_t::bytes_restored,
                    "Layer bytes of the restores that succeeded.")
      .def_readonly("snapshots_accepted", &auxstore_pipeline_stats_t::snapshots_accepted,
                    "Write-behind snapshots accepted into the queue.")
      .def_readonly("snapshots_shed", &auxstore_pipeline_stats_t::snapshots_shed,
                    "Write-behind snapshots shed (queue or pinned memory full).")
      .def_readonly("snapshots_written", &auxstore_pipeline_stats_t::snapshots_written,
                    "Write-behind snapshots written to the store.")
      .def_readonly("snapshots_failed", &auxstore_pipeline_stats_t::snapshots_failed,
                    "Write-behind snapshots that failed to write.")
      .def_readonly("bytes_snapshotted", &auxstore_pipeline_stats_t::bytes_snapshotted,
                    "Layer bytes of the write-behind snapshots written.")
      .def_readonly("staging_waits", &auxstore_pipeline_stats_t::staging_waits,
                    "Chunk reads that waited for a free staging buffer.")
      .def_readonly("restore_latency_us_sum", &auxstore_pipeline_stats_t::restore_latency_us_sum,
                    "Sum of the successful restores' latencies, in microseconds.")
      .def_readonly("restore_throughput_mibps_sum",
                    &auxstore_pipeline_stats_t::restore_throughput_mibps_sum,
                    "Sum of the successful restores' throughputs, in MiB/s.")
      .def_property_readonly(
          "restore_latency_us",
          [](const auxstore_pipeline_stats_t& s) {
            return std::vector<uint64_t>(s.restore_latency_us,
                                         s.restore_latency_us + AUXSTORE_LATENCY_BUCKETS);
          },
          "Latency buckets (bucket i: [2^i, 2^(i+1)) us, the last all above).")
      .def_property_readonly(
          "restore_throughput_mibps",
          [](const auxstore_pipeline_stats_t& s) {
            return std::vector<uint64_t>(s.restore_throughput_mibps,
                                         s.restore_throughput_mibps + AUXSTORE_THROUGHPUT_BUCKETS);
          },
          "Throughput buckets (bucket i: [2^i, 2^(i+1)) MiB/s, the last all above).")
      .def("as_dict", &PipelineStatsDict, "The counters as a dict {field: value}.")
      .def("__repr__", [](const auxstore_pipeline_stats_t& s) {
        return "PipelineStats(" + py::repr(PipelineStatsDict(s)).cast<std::string>() + ")";
      });

  py::class_<Pipeline, std::shared_ptr<Pipeline>> pipeline(
      m, "Pipeline",
      "Restores store -> device states and write-behind snapshots (auxstore_pipeline_t) over "
      "a Store and a Backend, which it keeps alive. A context manager: close() on exit waits "
      "for running restores and accepted snapshots.");
  pipeline.def(
      py::init([](std::shared_ptr<Store> store, std::shared_ptr<Backend> backend,
                  IntArg staging_buffers, IntArg staging_bytes, IntArg io_threads,
                  IntArg restore_read_ahead, IntArg snapshot_queue, IntArg snapshot_bytes) {
        ForbidInLogCallback();
        if (!store) throw py::type_error("store must be an auxstore.Store, not None");
        if (!backend) throw py::type_error("backend must be an auxstore.Backend, not None");
        auxstore_pipeline_options_t o;
        auxstore_pipeline_options_init(&o);
        // As auxstore_pipeline_create does by default: a staging buffer holds a chunk.
        o.staging_bytes = std::max<size_t>(o.staging_bytes, store->chunk_bytes());
        // None: the default; otherwise a count or size, checked and named.
        auto option = [](const IntArg& a, const char* name, auto* field) {
          if (!a.obj.is_none()) *field = ToBytes(a.obj, name);
        };
        option(staging_buffers, "staging_buffers", &o.staging_buffers);
        option(staging_bytes, "staging_bytes", &o.staging_bytes);
        option(io_threads, "io_threads", &o.io_threads);
        option(restore_read_ahead, "restore_read_ahead", &o.restore_read_ahead);
        option(snapshot_queue, "snapshot_queue", &o.snapshot_queue);
        option(snapshot_bytes, "snapshot_bytes", &o.snapshot_bytes);
        py::gil_scoped_release release;
        auto sl = store->LockOpen();
        auto bl = backend->LockOpen();
        auxstore_pipeline_t* p = nullptr;
        Check([&](char** e) {
          return auxstore_pipeline_create_with(store->raw(), backend->raw(), &o, &p, e);
        });
        auto pl = std::make_shared<Pipeline>(store, backend, p);
        store->AddPipeline(pl);
        backend->AddPipeline(pl);
        return pl;
      }),
      py::arg("store"), py::arg("backend"), py::kw_only(), py::arg("staging_buffers") = py::none(),
      py::arg("staging_bytes") = py::none(), py::arg("io_threads") = py::none(),
      py::arg("restore_read_ahead") = py::none(), py::arg("snapshot_queue") = py::none(),
      py::arg("snapshot_bytes") = py::none(),
      "Options left None take auxstore_pipeline_options_init's defaults (staging_bytes at "
      "least the store's chunk size).");
  pipeline
      .def("close", &Pipeline::Close,
           "Closes it: releases its restore handles, then waits for running restores and accepted "
           "snapshots. Idempotent.")
      .def_property_readonly("closed", &Pipeline::closed,
                             "True once closed (close(), a `with` block, or its parent closed).")
      .def_property_readonly("store", &Pipeline::store, "The Store it was created over.")
      .def_property_readonly("backend", &Pipeline::backend, "The Backend it was created over.")
      .def("__enter__", [](std::shared_ptr<Pipeline> p) { return p; })
      .def("__exit__", [](Pipeline& p, py::args) { p.Close(); })
      .def("__repr__",
           [](Pipeline& p) {
             return p.closed() ? std::string("<auxstore.Pipeline closed>")
                               : std::string("<auxstore.Pipeline>");
           })
      .def_property_readonly(
          "stream",
          [](Pipeline& p) {
            py::gil_scoped_release release;
            return p.With([](auxstore_pipeline_t* x) { return auxstore_pipeline_stream(x); });
          },
          "The pipeline's own stream (restores started without a stream run on it).")
      .def(
          "stats",
          [](Pipeline& p) {
            auxstore_pipeline_stats_t s{};
            py::gil_scoped_release release;
            p.With([&](auxstore_pipeline_t* x) {
              Check([&](char** e) { return auxstore_pipeline_stats(x, &s, e); });
            });
            return s;
          },
          "The pipeline's counters and histograms (a PipelineStats).")
      .def(
          "flush",
          [](Pipeline& p) {
            ForbidBlockingInCallback("Pipeline.flush");
            py::gil_scoped_release release;
            p.With([&](auxstore_pipeline_t* x) {
              Check([&](char** e) { return auxstore_pipeline_flush(x, e); });
            });
          },
          "Waits until every accepted snapshot is written; raises the first write error since "
          "the last flush.");

  pipeline.def(
      "snapshot",
      [](Pipeline& p, IntArg ns_arg, py::handle prefix, IntArg token_count_arg, py::handle sources,
         IntArg stream_arg) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t token_count = ToU64(token_count_arg, "token_count");
        const uint64_t stream = ToU64(stream_arg, "stream");
        const Prefix pre = ToPrefix(prefix);
        std::vector<std::shared_ptr<State>> states;
        std::vector<auxstore_snapshot_source_t> c;
        for (auto& [layer, v] : ToLayerPairs(sources, "sources")) {
          states.push_back(ToState(v, "sources[" + std::to_string(layer) + "]"));
          c.push_back({layer, nullptr});
        }
        int rc;
        {
          py::gil_scoped_release release;
          // Each source idle and locked for the call, in address order.
          std::vector<State*> order;
          for (auto& s : states) order.push_back(s.get());
          std::sort(order.begin(), order.end());
          order.erase(std::unique(order.begin(), order.end()), order.end());
          std::vector<std::unique_lock<std::mutex>> locks;
          std::vector<std::pair<State*, auxstore_state_t*>> raw;
          for (State* s : order) {
            auxstore_state_t* r = nullptr;
            locks.push_back(s->LockIdle(&r));
            raw.emplace_back(s, r);
          }
          for (size_t i = 0; i < c.size(); ++i) {
            for (auto& [s, r] : raw) {
              if (s == states[i].get()) c[i].state = r;
            }
          }
          rc = p.With([&](auxstore_pipeline_t* x) {
            return CheckAllowing(AUXSTORE_CAPACITY, [&](char** e) {
              return auxstore_snapshot(x, ns, pre.data(), token_count, c.data(), c.size(), stream,
                                       e);
            });
          });
        }
        return rc == AUXSTORE_OK;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("token_count"), py::arg("sources"), py::kw_only(),
      py::arg("stream"),
      "Write-behind snapshot of `sources` ({layer: State} or [(layer, State)]): D2H copies on "
      "the engine's `stream`, written off this thread. Returns True when accepted, False "
      "when shed (queue or memory full: nothing enqueued, counted in snapshots_shed; never "
      "blocks). Other errors raise. Keep the sources' buffers until `stream` passed the "
      "copies (synchronize it).");

  RegisterRestores(pipeline);
  RegisterRestoreHandle(m);
  RegisterRestoreBatch(m, pipeline);

  m.def(
      "metrics_text",
      [](std::shared_ptr<Store> s, std::shared_ptr<Pipeline> p, py::handle labels) {
        if (!s && !p) throw py::value_error("give a store, a pipeline or both");
        return MetricsText(s, p, labels);
      },
      py::arg("store") = py::none(), py::arg("pipeline") = py::none(),
      py::arg("labels") = py::none(),
      "Prometheus text exposition (format 0.0.4) of the store's and/or the pipeline's metrics "
      "(auxstore_metrics_text). labels: {name: value} (escaped) or a str put as it is.");
}

}  // namespace auxpy
