// auxstore.Pipeline (restores and write-behind snapshots), auxstore.RestoreHandle,
// the restore futures, and the Prometheus text exposition.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <thread>

#include "common.h"

namespace auxpy {

namespace {

PyObject* g_future_class = nullptr;  // concurrent.futures.Future, for the process's life

struct DoneCtx {
  std::shared_ptr<RestoreOp> op;
};

// Parsed targets {layer: State} / [(layer, State)], owned by the restore
// (BeginRestore) with the GIL released.
struct Targets {
  std::vector<std::shared_ptr<State>> states;
  std::vector<auxstore_restore_target_t> c;

  void Parse(py::handle obj) {
    for (auto& [layer, v] : ToLayerPairs(obj, "targets")) {
      states.push_back(ToState(v, "targets[" + std::to_string(layer) + "]"));
      c.push_back({layer, nullptr});
    }
  }
  void Begin() {  // no GIL
    size_t i = 0;
    try {
      for (; i < states.size(); ++i) c[i].state = states[i]->BeginRestore();
    } catch (...) {
      for (size_t j = 0; j < i; ++j) states[j]->EndRestore();
      throw;
    }
  }
  void End() {
    for (auto& s : states) s->EndRestore();
  }
};

std::shared_ptr<RestoreOp> NewOp(bool with_future) {
  auto op = std::make_shared<RestoreOp>();
  if (with_future) {
    op->future = py::reinterpret_borrow<py::object>(g_future_class)();
    // Running from the start: Future.cancel() returns False (use
    // RestoreHandle.cancel(), which asks auxstore to stop).
    op->future.attr("set_running_or_notify_cancel")();
  }
  return op;
}

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

// ---- RestoreOp ------------------------------------------------------------------------

RestoreOp::~RestoreOp() {
  if (future) {
    PyObject* f = future.release().ptr();
    (void)WithGil([&] { Py_DECREF(f); });  // leaked when the interpreter is gone
  }
}

void RestoreOp::Finish(int c, const char* m) {
  {
    std::lock_guard lk(mu);
    code = c;
    message = m != nullptr ? m : "";
    finished = true;
  }
  for (auto& t : targets) t->EndRestore();
  cv.notify_all();
}

void RestoreOp::Resolve() {
  if (future) {
    try {
      if (code == AUXSTORE_OK) {
        future.attr("set_result")(py::none());
      } else {
        future.attr("set_exception")(MakeError(code, message));
      }
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("auxstore: completing a restore's future");
    } catch (const std::exception& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
      PyErr_WriteUnraisable(future.ptr());
    }
  }
  targets.clear();
  {
    std::lock_guard lk(mu);
    resolved = true;
  }
  cv.notify_all();
}

void RestoreOp::Abandon() {
  {
    std::lock_guard lk(mu);
    resolved = true;
  }
  cv.notify_all();
}

void RestoreOp::WaitResolved() {
  std::unique_lock lk(mu);
  cv.wait(lk, [&] { return resolved; });
}

void RestoreDone(void* arg, int code, const char* message) {
  auto* ctx = static_cast<DoneCtx*>(arg);
  std::shared_ptr<RestoreOp> op = std::move(ctx->op);
  delete ctx;
  op->Finish(code, message);  // the targets are the engine's again
  if (PythonGone()) {
    op->Abandon();
    return;
  }
  PyGILState_STATE st = PyGILState_Ensure();
  ++t_done_callback;
  op->Resolve();  // runs the future's callbacks, here: they must not block
  op.reset();
  --t_done_callback;
  PyGILState_Release(st);
}

// ---- Pipeline ---------------------------------------------------------------------------

Pipeline::~Pipeline() {
  WithoutGil([&] { CloseNoGil(); });
}

void Pipeline::CloseNoGil() {
  std::unique_lock lk(mu_);
  if (p_ == nullptr) return;
  // Handles go before their pipeline (and backend); their restores go on.
  for (auto& h : restores_.Take()) h->CloseNoGil();
  auxstore_pipeline_t* p = p_;
  p_ = nullptr;
  if (t_done_callback > 0) {
    // On one of this pipeline's threads (a future's callback dropped the last
    // reference): destroying it here would wait on this very thread.
    store_->deferred().Add();
    backend_->deferred().Add();
    std::thread([p, s = store_, b = backend_]() mutable {
      auxstore_pipeline_destroy(p);
      s->deferred().Done();
      b->deferred().Done();
      s.reset();  // may close them: their destructors take the GIL as needed
      b.reset();
    }).detach();
    return;
  }
  auxstore_pipeline_destroy(p);  // waits for running restores and accepted snapshots
}

void Pipeline::Close() {
  ForbidBlockingInCallback("Pipeline.close");
  py::gil_scoped_release release;
  CloseNoGil();
}

bool Pipeline::closed() {
  bool c = false;
  WithoutGil([&] {
    std::shared_lock<std::shared_mutex> lk(mu_, std::defer_lock);
    if (t_done_callback > 0 ? !lk.try_lock() : (lk.lock(), false)) {
      c = true;  // being closed
      return;
    }
    c = p_ == nullptr;
  });
  return c;
}

std::shared_lock<std::shared_mutex> Pipeline::LockOpen() {
  ForbidInLogCallback();
  auto lk = LockShared(mu_, "pipeline");
  if (p_ == nullptr) throw py::value_error("the pipeline is closed");
  return lk;
}

// ---- RestoreHandle -------------------------------------------------------------------------

RestoreHandle::~RestoreHandle() {
  WithoutGil([&] { CloseNoGil(); });
}

void RestoreHandle::CloseNoGil() {
  std::unique_lock lk(mu_);
  if (h_ == nullptr) return;
  auxstore_restore_handle_release(h_);  // a running restore goes on
  h_ = nullptr;
}

void RestoreHandle::Close() {
  ForbidInLogCallback();
  py::gil_scoped_release release;
  CloseNoGil();
}

bool RestoreHandle::closed() {
  bool c = false;
  WithoutGil([&] {
    std::shared_lock<std::shared_mutex> lk(mu_, std::defer_lock);
    if (t_done_callback > 0 ? !lk.try_lock() : (lk.lock(), false)) {
      c = true;  // being closed
      return;
    }
    c = h_ == nullptr;
  });
  return c;
}

// ---- bindings ---------------------------------------------------------------------------------

void RegisterPipeline(py::module_& m) {
  g_future_class =
      py::object(py::module_::import("concurrent.futures").attr("Future")).release().ptr();

  py::class_<auxstore_pipeline_stats_t>(m, "PipelineStats", "auxstore_pipeline_stats_t.")
      .def_readonly("restores_ok", &auxstore_pipeline_stats_t::restores_ok)
      .def_readonly("restores_failed", &auxstore_pipeline_stats_t::restores_failed)
      .def_readonly("restores_cancelled", &auxstore_pipeline_stats_t::restores_cancelled)
      .def_readonly("restores_running", &auxstore_pipeline_stats_t::restores_running)
      .def_readonly("bytes_restored", &auxstore_pipeline_stats_t::bytes_restored)
      .def_readonly("snapshots_accepted", &auxstore_pipeline_stats_t::snapshots_accepted)
      .def_readonly("snapshots_shed", &auxstore_pipeline_stats_t::snapshots_shed)
      .def_readonly("snapshots_written", &auxstore_pipeline_stats_t::snapshots_written)
      .def_readonly("snapshots_failed", &auxstore_pipeline_stats_t::snapshots_failed)
      .def_readonly("bytes_snapshotted", &auxstore_pipeline_stats_t::bytes_snapshotted)
      .def_readonly("staging_waits", &auxstore_pipeline_stats_t::staging_waits)
      .def_readonly("restore_latency_us_sum", &auxstore_pipeline_stats_t::restore_latency_us_sum)
      .def_readonly("restore_throughput_mibps_sum",
                    &auxstore_pipeline_stats_t::restore_throughput_mibps_sum)
      .def_property_readonly("restore_latency_us",
                             [](const auxstore_pipeline_stats_t& s) {
                               return std::vector<uint64_t>(
                                   s.restore_latency_us,
                                   s.restore_latency_us + AUXSTORE_LATENCY_BUCKETS);
                             })
      .def_property_readonly("restore_throughput_mibps",
                             [](const auxstore_pipeline_stats_t& s) {
                               return std::vector<uint64_t>(
                                   s.restore_throughput_mibps,
                                   s.restore_throughput_mibps + AUXSTORE_THROUGHPUT_BUCKETS);
                             })
      .def("as_dict", &PipelineStatsDict)
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
                  std::optional<size_t> staging_buffers, std::optional<size_t> staging_bytes,
                  std::optional<size_t> io_threads, std::optional<size_t> restore_read_ahead,
                  std::optional<size_t> snapshot_queue, std::optional<uint64_t> snapshot_bytes) {
        ForbidInLogCallback();
        if (!store) throw py::type_error("store must be an auxstore.Store, not None");
        if (!backend) throw py::type_error("backend must be an auxstore.Backend, not None");
        auxstore_pipeline_options_t o;
        auxstore_pipeline_options_init(&o);
        // As auxstore_pipeline_create does by default: a staging buffer holds a chunk.
        o.staging_bytes = std::max<size_t>(o.staging_bytes, store->chunk_bytes());
        if (staging_buffers) o.staging_buffers = *staging_buffers;
        if (staging_bytes) o.staging_bytes = *staging_bytes;
        if (io_threads) o.io_threads = *io_threads;
        if (restore_read_ahead) o.restore_read_ahead = *restore_read_ahead;
        if (snapshot_queue) o.snapshot_queue = *snapshot_queue;
        if (snapshot_bytes) o.snapshot_bytes = *snapshot_bytes;
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
  pipeline.def("close", &Pipeline::Close)
      .def_property_readonly("closed", &Pipeline::closed)
      .def_property_readonly("store", &Pipeline::store)
      .def_property_readonly("backend", &Pipeline::backend)
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
      .def("stats",
           [](Pipeline& p) {
             auxstore_pipeline_stats_t s{};
             py::gil_scoped_release release;
             p.With([&](auxstore_pipeline_t* x) {
               Check([&](char** e) { return auxstore_pipeline_stats(x, &s, e); });
             });
             return s;
           })
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
      [](Pipeline& p, uint64_t ns, py::handle prefix, uint64_t token_count, py::handle sources,
         uint64_t stream) {
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

  pipeline.def(
      "restore_wait",
      [](Pipeline& p, uint64_t ns, py::handle prefix, py::handle targets) {
        ForbidBlockingInCallback("Pipeline.restore_wait");
        const Prefix pre = ToPrefix(prefix);
        Targets t;
        t.Parse(targets);
        py::gil_scoped_release release;
        t.Begin();
        try {
          p.With([&](auxstore_pipeline_t* x) {
            Check([&](char** e) {
              return auxstore_restore_wait(x, ns, pre.data(), t.c.data(), t.c.size(), e);
            });
          });
        } catch (...) {
          t.End();
          throw;
        }
        t.End();
      },
      py::arg("ns"), py::arg("prefix"), py::arg("targets"),
      "Restores snapshot (ns, prefix) into fresh target states ({layer: State}), waiting for "
      "the result (the GIL released throughout).");

  pipeline.def(
      "restore_async",
      [](std::shared_ptr<Pipeline> p, uint64_t ns, py::handle prefix, py::handle targets) {
        const Prefix pre = ToPrefix(prefix);
        auto op = NewOp(true);
        Targets t;
        t.Parse(targets);
        op->targets = t.states;
        {
          py::gil_scoped_release release;
          t.Begin();
          auto* ctx = new DoneCtx{op};
          try {
            p->With([&](auxstore_pipeline_t* x) {
              Check([&](char** e) {
                return auxstore_restore(x, ns, pre.data(), t.c.data(), t.c.size(), RestoreDone, ctx,
                                        e);
              });
            });
          } catch (...) {
            delete ctx;  // refused up front: done is never called
            t.End();
            throw;
          }
        }
        return op->future;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("targets"),
      "Starts a restore (auxstore_restore) and returns a concurrent.futures.Future, completed "
      "from the C done callback: result None, or the AuxstoreError. Its callbacks run on a "
      "pipeline thread: keep them short (asyncio: asyncio.wrap_future).");

  pipeline.def(
      "restore_start",
      [](std::shared_ptr<Pipeline> p, uint64_t ns, py::handle prefix, py::handle targets,
         std::optional<uint64_t> stream, uint64_t lease) {
        const Prefix pre = ToPrefix(prefix);
        auto op = NewOp(true);
        Targets t;
        t.Parse(targets);
        op->targets = t.states;
        auxstore_restore_options_t o;
        auxstore_restore_options_init(&o);
        if (stream) {
          o.use_stream = 1;
          o.stream = *stream;
        }
        o.lease = lease;
        o.done = RestoreDone;
        std::shared_ptr<RestoreHandle> handle;
        {
          py::gil_scoped_release release;
          t.Begin();
          auto* ctx = new DoneCtx{op};
          o.done_arg = ctx;
          try {
            p->With([&](auxstore_pipeline_t* x) {
              auxstore_restore_handle_t* h = nullptr;
              Check([&](char** e) {
                return auxstore_restore_start(x, ns, pre.data(), t.c.data(), t.c.size(), &o, &h, e);
              });
              handle = std::make_shared<RestoreHandle>(p, op, h);
              p->AddRestore(handle);  // under the pipeline's lock: a close releases it first
            });
          } catch (...) {
            if (!handle) {
              delete ctx;
              t.End();
            }
            throw;
          }
        }
        return handle;
      },
      py::arg("ns"), py::arg("prefix"), py::arg("targets"), py::kw_only(),
      py::arg("stream") = py::none(), py::arg("lease") = 0,
      "Starts a restore and returns its RestoreHandle (join, wait_layer, layer_done, "
      "stream_wait_layer / _all, cancel, layers_done, future). `stream`: the engine's stream "
      "to run on (not 0; None: the pipeline's own); `lease`: released when it completes.");

  py::class_<RestoreHandle, std::shared_ptr<RestoreHandle>>(
      m, "RestoreHandle",
      "A running restore (auxstore_restore_handle_t). A context manager: release on exit (a "
      "restore still running goes on; its targets stay owned by it until it is done).")
      .def("close", &RestoreHandle::Close)
      .def("release", &RestoreHandle::Close)
      .def_property_readonly("closed", &RestoreHandle::closed)
      .def("__enter__", [](std::shared_ptr<RestoreHandle> h) { return h; })
      .def("__exit__", [](RestoreHandle& h, py::args) { h.Close(); })
      .def_property_readonly(
          "future", [](RestoreHandle& h) { return h.op()->future; },
          "A concurrent.futures.Future completed from the C done callback.")
      .def(
          "result",
          [](RestoreHandle& h, py::object timeout) {
            return h.op()->future.attr("result")(timeout);
          },
          py::arg("timeout") = py::none(), "future.result(timeout).")
      .def(
          "join",
          [](RestoreHandle& h) {
            ForbidBlockingInCallback("RestoreHandle.join");
            py::gil_scoped_release release;
            auto op = h.op();
            h.With([&](auxstore_restore_handle_t* x) {
              char* err = nullptr;
              const int rc = auxstore_restore_join(x, &err);
              std::string msg = err != nullptr ? err : auxstore_code_name(rc);
              auxstore_free(err);
              op->WaitResolved();  // the future is complete when join returns
              if (rc != AUXSTORE_OK) throw Error(rc, msg);
            });
          },
          "Waits until done (GIL released); raises the restore's error.")
      .def("poll",
           [](RestoreHandle& h) {
             py::gil_scoped_release release;
             return h.With(
                 [](auxstore_restore_handle_t* x) { return auxstore_restore_poll(x) == 1; });
           })
      .def_property_readonly("done",
                             [](RestoreHandle& h) {
                               py::gil_scoped_release release;
                               return h.With([](auxstore_restore_handle_t* x) {
                                 return auxstore_restore_poll(x) == 1;
                               });
                             })
      .def(
          "cancel",
          [](RestoreHandle& h) {
            py::gil_scoped_release release;
            h.With([](auxstore_restore_handle_t* x) { auxstore_restore_cancel(x); });
          },
          "Asks it to stop: it then fails with UnavailableError unless it already committed.")
      .def(
          "layer_done",
          [](RestoreHandle& h, uint32_t layer) {
            py::gil_scoped_release release;
            return h.With([&](auxstore_restore_handle_t* x) {
              return auxstore_restore_layer_done(x, layer) == 1;
            });
          },
          py::arg("layer"))
      .def(
          "wait_layer",
          [](RestoreHandle& h, uint32_t layer) {
            ForbidBlockingInCallback("RestoreHandle.wait_layer");
            py::gil_scoped_release release;
            h.With([&](auxstore_restore_handle_t* x) {
              Check([&](char** e) { return auxstore_restore_wait_layer(x, layer, e); });
            });
          },
          py::arg("layer"),
          "Waits until `layer` is on the device, or raises the error that ended the restore "
          "before it.")
      .def(
          "stream_wait_layer",
          [](RestoreHandle& h, uint32_t layer, uint64_t stream) {
            ForbidBlockingInCallback("RestoreHandle.stream_wait_layer");
            py::gil_scoped_release release;
            h.With([&](auxstore_restore_handle_t* x) {
              Check([&](char** e) {
                return auxstore_restore_stream_wait_layer(x, layer, stream, e);
              });
            });
          },
          py::arg("layer"), py::arg("stream"),
          "Makes the engine's `stream` wait on the device for `layer` (blocks the host only "
          "until that layer's work is enqueued).")
      .def(
          "stream_wait_all",
          [](RestoreHandle& h, uint64_t stream) {
            ForbidBlockingInCallback("RestoreHandle.stream_wait_all");
            py::gil_scoped_release release;
            h.With([&](auxstore_restore_handle_t* x) {
              Check([&](char** e) { return auxstore_restore_stream_wait_all(x, stream, e); });
            });
          },
          py::arg("stream"))
      .def(
          "layers_done",
          [](RestoreHandle& h) {
            std::vector<uint32_t> layers(16);
            py::gil_scoped_release release;
            h.With([&](auxstore_restore_handle_t* x) {
              for (;;) {
                size_t n = 0;
                const int rc = CheckAllowing(AUXSTORE_OUT_OF_RANGE, [&](char** e) {
                  return auxstore_restore_layers_done(x, layers.data(), layers.size(), &n, e);
                });
                layers.resize(n);
                if (rc == AUXSTORE_OK) return;
              }
            });
            return layers;
          },
          "The layers whose bytes landed so far, ascending.");

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
