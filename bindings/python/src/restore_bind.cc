// Restores from Python: Pipeline.restore_wait / restore_async / restore_start
// (targets owned by the restore, futures completed from the C done callback)
// and the auxstore.RestoreHandle class.
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "common.h"

namespace auxpy {

namespace {

PyObject* g_future_class = nullptr;  // concurrent.futures.Future, for the process's life

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

}  // namespace

void RegisterRestores(PipelineClass& pipeline) {
  g_future_class =
      py::object(py::module_::import("concurrent.futures").attr("Future")).release().ptr();
  pipeline.def(
      "restore_wait",
      [](Pipeline& p, IntArg ns_arg, py::handle prefix, py::handle targets) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
      [](std::shared_ptr<Pipeline> p, IntArg ns_arg, py::handle prefix, py::handle targets) {
        const uint64_t ns = ToU64(ns_arg, "ns");
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
      [](std::shared_ptr<Pipeline> p, IntArg ns_arg, py::handle prefix, py::handle targets,
         std::optional<uint64_t> stream, IntArg lease_arg, py::handle rows) {
        const uint64_t ns = ToU64(ns_arg, "ns");
        const uint64_t lease = ToU64(lease_arg, "lease");
        std::optional<std::pair<uint64_t, uint64_t>> row_range;
        if (!rows.is_none()) {
          const py::tuple r = py::reinterpret_borrow<py::object>(rows).cast<py::tuple>();
          if (r.size() != 2) throw py::type_error("rows must be (first, last)");
          row_range.emplace(ToU64(r[0].cast<IntArg>(), "rows[0]"),
                            ToU64(r[1].cast<IntArg>(), "rows[1]"));
        }
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
        if (row_range) {
          o.use_rows = 1;
          o.first_row = row_range->first;
          o.last_row = row_range->second;
        }
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
      py::arg("stream") = py::none(), py::arg("lease") = 0, py::arg("rows") = py::none(),
      "Starts a restore and returns its RestoreHandle (join, wait_layer, layer_done, "
      "stream_wait_layer / _all, cancel, layers_done, future). `stream`: the engine's stream "
      "to run on (not 0; None: the pipeline's own); `lease`: released when it completes; "
      "`rows`: (first, last), only those rows of QSA and DSA targets that hold exactly rows "
      "[0, first) (each layer still read and verified whole, only the range uploaded).");
}

void RegisterRestoreHandle(py::module_& m) {
  py::class_<RestoreHandle, std::shared_ptr<RestoreHandle>>(
      m, "RestoreHandle",
      "A running restore (auxstore_restore_handle_t). A context manager: release on exit (a "
      "restore still running goes on; its targets stay owned by it until it is done).")
      .def("close", &RestoreHandle::Close, "Releases the handle (the restore goes on). Idempotent.")
      .def("release", &RestoreHandle::Close, "The same as close().")
      .def_property_readonly("closed", &RestoreHandle::closed,
                             "True once closed (close(), a `with` block, or its parent closed).")
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
      .def(
          "poll",
          [](RestoreHandle& h) {
            py::gil_scoped_release release;
            return h.With(
                [](auxstore_restore_handle_t* x) { return auxstore_restore_poll(x) == 1; });
          },
          "True once the restore is done (succeeded, failed or cancelled); never blocks.")
      .def_property_readonly(
          "done",
          [](RestoreHandle& h) {
            py::gil_scoped_release release;
            return h.With(
                [](auxstore_restore_handle_t* x) { return auxstore_restore_poll(x) == 1; });
          },
          "poll() as a property.")
      .def(
          "cancel",
          [](RestoreHandle& h) {
            py::gil_scoped_release release;
            h.With([](auxstore_restore_handle_t* x) { auxstore_restore_cancel(x); });
          },
          "Asks it to stop: it then fails with UnavailableError unless it already committed.")
      .def(
          "layer_done",
          [](RestoreHandle& h, IntArg layer_arg) {
            const uint32_t layer = ToU32(layer_arg, "layer");
            py::gil_scoped_release release;
            return h.With([&](auxstore_restore_handle_t* x) {
              return auxstore_restore_layer_done(x, layer) == 1;
            });
          },
          py::arg("layer"), "True once `layer`'s bytes are on the device; never blocks.")
      .def(
          "wait_layer",
          [](RestoreHandle& h, IntArg layer_arg) {
            const uint32_t layer = ToU32(layer_arg, "layer");
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
          [](RestoreHandle& h, IntArg layer_arg, IntArg stream_arg) {
            const uint32_t layer = ToU32(layer_arg, "layer");
            const uint64_t stream = ToU64(stream_arg, "stream");
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
          [](RestoreHandle& h, IntArg stream_arg) {
            const uint64_t stream = ToU64(stream_arg, "stream");
            ForbidBlockingInCallback("RestoreHandle.stream_wait_all");
            py::gil_scoped_release release;
            h.With([&](auxstore_restore_handle_t* x) {
              Check([&](char** e) { return auxstore_restore_stream_wait_all(x, stream, e); });
            });
          },
          py::arg("stream"),
          "Makes the engine's `stream` wait on the device for every layer of the restore.")
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
}

}  // namespace auxpy
