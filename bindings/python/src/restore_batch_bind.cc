// Many snapshots restored into device states with one handle from Python
// (issue 24): Pipeline.restore_batch([(ns, prefix, targets[, lease]), ...])
// -> RestoreBatch, over auxstore_restore_batch_*. Each snapshot's target
// States are owned by the batch until its restore is done: the batch hands
// them back when it sees that snapshot done (a wait, poll, snapshot_done,
// finished) and at the latest on release, which waits for every restore.
#include <pybind11/stl.h>

#include <mutex>
#include <optional>

#include "common.h"

namespace auxpy {

namespace {

class RestoreBatch {
 public:
  RestoreBatch(std::shared_ptr<Pipeline> p, auxstore_restore_batch_t* h,
               std::vector<std::vector<std::shared_ptr<State>>> states)
      : pipeline_(std::move(p)), h_(h), states_(std::move(states)), ended_(states_.size()) {}
  ~RestoreBatch() { Release(); }
  RestoreBatch(const RestoreBatch&) = delete;
  RestoreBatch& operator=(const RestoreBatch&) = delete;

  size_t size() const { return states_.size(); }
  auxstore_restore_batch_t* handle() const {
    if (h_ == nullptr) throw py::value_error("the restore batch is released");
    return h_;
  }
  void CheckIndex(size_t i) const {
    if (i >= states_.size()) {
      throw py::index_error("snapshot " + std::to_string(i) + ": the batch has " +
                            std::to_string(states_.size()));
    }
  }
  // Hands snapshot i's states back once its restore is done. No GIL needed.
  void EndIfDone(size_t i) {
    std::lock_guard lock(mu_);
    if (ended_[i] || h_ == nullptr || auxstore_restore_batch_snapshot_done(h_, i) != 1) return;
    for (auto& s : states_[i]) s->EndRestore();
    ended_[i] = true;
  }
  void EndEveryDone() {
    for (size_t i = 0; i < states_.size(); ++i) EndIfDone(i);
  }
  // Waits for every restore, hands every state back, frees the handle.
  void Release() {
    if (h_ == nullptr) return;
    WithoutGil([&] {
      char* e = nullptr;
      (void)auxstore_restore_batch_wait(h_, &e);
      auxstore_free(e);
      EndEveryDone();
      std::lock_guard lock(mu_);
      auxstore_restore_batch_release(h_);
      h_ = nullptr;
    });
  }

 private:
  std::shared_ptr<Pipeline> pipeline_;
  std::mutex mu_;
  auxstore_restore_batch_t* h_;
  std::vector<std::vector<std::shared_ptr<State>>> states_;
  std::vector<bool> ended_;  // under mu_
};

// The batch call's parsed snapshots: C structs, their targets, the States.
struct Snapshots {
  std::vector<auxstore_restore_snapshot_t> c;
  std::vector<std::vector<auxstore_restore_target_t>> targets;
  std::vector<std::vector<std::shared_ptr<State>>> states;
  size_t begun = 0;  // states marked as a restore's (BeginRestore), in order

  void Parse(py::iterable items) {
    for (py::handle item : items) {
      const std::string name = "snapshots[" + std::to_string(c.size()) + "]";
      const py::tuple t = py::reinterpret_borrow<py::object>(item).cast<py::tuple>();
      if (t.size() != 3 && t.size() != 4) {
        throw py::type_error(name + " must be (ns, prefix, targets[, lease])");
      }
      auxstore_restore_snapshot_t s{};
      s.ns = ToU64(t[0], "ns");
      const Prefix p = ToPrefix(t[1], name.c_str());
      std::memcpy(s.prefix, p.data(), 16);
      s.lease = t.size() == 4 ? ToU64(t[3], "lease") : 0;
      std::vector<auxstore_restore_target_t> ts;
      std::vector<std::shared_ptr<State>> ss;
      for (auto& [layer, v] : ToLayerPairs(t[2], (name + ".targets").c_str())) {
        ss.push_back(ToState(v, name + ".targets[" + std::to_string(layer) + "]"));
        ts.push_back({layer, nullptr});
      }
      c.push_back(s);
      targets.push_back(std::move(ts));
      states.push_back(std::move(ss));
    }
    for (size_t i = 0; i < c.size(); ++i) {
      c[i].targets = targets[i].empty() ? nullptr : targets[i].data();
      c[i].n_targets = targets[i].size();
    }
  }
  void Begin() {  // no GIL; on a refusal what was begun is ended
    try {
      for (size_t i = 0; i < states.size(); ++i) {
        for (size_t k = 0; k < states[i].size(); ++k) {
          targets[i][k].state = states[i][k]->BeginRestore();
          ++begun;
        }
      }
    } catch (...) {
      End();
      throw;
    }
  }
  void End() {
    size_t n = 0;
    for (auto& ss : states) {
      for (auto& s : ss) {
        if (n++ < begun) s->EndRestore();
      }
    }
    begun = 0;
  }
};

}  // namespace

void RegisterRestoreBatch(py::module_& m, PipelineClass& pipeline) {
  py::class_<RestoreBatch, std::shared_ptr<RestoreBatch>>(
      m, "RestoreBatch",
      "Many snapshots being restored into device states with one handle "
      "(Pipeline.restore_batch): completion by snapshot index and layer.")
      .def("__len__", &RestoreBatch::size, "How many snapshots it restores.")
      .def(
          "poll",
          [](RestoreBatch& b) {
            const bool done = auxstore_restore_batch_poll(b.handle()) == 1;
            b.EndEveryDone();
            return done;
          },
          "True when every snapshot is done; never blocks.")
      .def(
          "snapshot_done",
          [](RestoreBatch& b, size_t i) {
            b.CheckIndex(i);
            const bool done = auxstore_restore_batch_snapshot_done(b.handle(), i) == 1;
            b.EndIfDone(i);
            return done;
          },
          py::arg("i"), "True when snapshot i is done; never blocks.")
      .def(
          "layer_done",
          [](RestoreBatch& b, size_t i, IntArg layer_arg) {
            b.CheckIndex(i);
            const uint32_t layer = ToU32(layer_arg, "layer");
            return auxstore_restore_batch_layer_done(b.handle(), i, layer) == 1;
          },
          py::arg("i"), py::arg("layer"), "True when `layer` of snapshot i is on the device.")
      .def(
          "wait",
          [](RestoreBatch& b) {
            auxstore_restore_batch_t* h = b.handle();
            ForbidBlockingInCallback("RestoreBatch.wait");
            WithoutGil([&] {
              char* e = nullptr;
              const int rc = auxstore_restore_batch_wait(h, &e);
              std::string msg = e != nullptr ? e : auxstore_code_name(rc);
              auxstore_free(e);
              b.EndEveryDone();
              if (rc != AUXSTORE_OK) throw Error(rc, msg);
            });
          },
          "Waits for every snapshot (GIL released); raises the first failed one's error.")
      .def(
          "wait_snapshot",
          [](RestoreBatch& b, size_t i) {
            b.CheckIndex(i);
            auxstore_restore_batch_t* h = b.handle();
            ForbidBlockingInCallback("RestoreBatch.wait_snapshot");
            WithoutGil([&] {
              char* e = nullptr;
              const int rc = auxstore_restore_batch_wait_snapshot(h, i, &e);
              std::string msg = e != nullptr ? e : auxstore_code_name(rc);
              auxstore_free(e);
              b.EndIfDone(i);
              if (rc != AUXSTORE_OK) throw Error(rc, msg);
            });
          },
          py::arg("i"), "Waits for snapshot i; raises its error.")
      .def(
          "wait_layer",
          [](RestoreBatch& b, size_t i, IntArg layer_arg) {
            b.CheckIndex(i);
            const uint32_t layer = ToU32(layer_arg, "layer");
            auxstore_restore_batch_t* h = b.handle();
            ForbidBlockingInCallback("RestoreBatch.wait_layer");
            WithoutGil([&] {
              Check([&](char** e) { return auxstore_restore_batch_wait_layer(h, i, layer, e); });
            });
          },
          py::arg("i"), py::arg("layer"),
          "Waits until `layer` of snapshot i is on the device (vLLM's wait_for_layer_load), or "
          "raises the error that ended its restore before it.")
      .def(
          "finished",
          [](RestoreBatch& b) {
            std::vector<size_t> got(b.size());
            size_t n = 0;
            Check([&](char** e) {
              return auxstore_restore_batch_finished(b.handle(), got.empty() ? nullptr : got.data(),
                                                     got.size(), &n, e);
            });
            got.resize(n);
            for (size_t i : got) b.EndIfDone(i);
            return got;
          },
          "The indices of the snapshots done since the last call, each once (vLLM's "
          "get_finished); never blocks.")
      .def(
          "cancel", [](RestoreBatch& b) { auxstore_restore_batch_cancel(b.handle()); },
          "Asks every restore to stop (each then fails with UnavailableError unless it already "
          "committed).")
      .def("release", &RestoreBatch::Release,
           "Waits for every restore, hands the target states back and frees the handle.")
      .def(
          "__enter__", [](std::shared_ptr<RestoreBatch> b) { return b; }, "Itself.")
      .def(
          "__exit__", [](RestoreBatch& b, py::args) { b.Release(); }, "Releases it (release).");

  pipeline.def(
      "restore_batch",
      [](std::shared_ptr<Pipeline> p, py::iterable snapshots, std::optional<uint64_t> stream) {
        Snapshots s;
        s.Parse(snapshots);
        auxstore_restore_options_t o;
        auxstore_restore_options_init(&o);
        if (stream) {
          o.use_stream = 1;
          o.stream = *stream;
        }
        std::shared_ptr<RestoreBatch> batch;
        WithoutGil([&] {
          s.Begin();
          try {
            p->With([&](auxstore_pipeline_t* x) {
              auxstore_restore_batch_t* h = nullptr;
              Check([&](char** e) {
                return auxstore_restore_batch_start(x, s.c.empty() ? nullptr : s.c.data(),
                                                    s.c.size(), &o, &h, e);
              });
              batch = std::make_shared<RestoreBatch>(p, h, std::move(s.states));
            });
          } catch (...) {
            if (!batch) s.End();
            throw;
          }
        });
        return batch;
      },
      py::arg("snapshots"), py::kw_only(), py::arg("stream") = py::none(),
      "Restores many snapshots, each (ns, prefix, {layer: State}[, lease]), with one handle: a "
      "RestoreBatch (wait, wait_snapshot(i), wait_layer(i, layer), poll, snapshot_done, "
      "layer_done, finished, cancel, release). Every snapshot is checked first "
      "(InvalidArgumentError naming snapshots[i], nothing started); a snapshot's own error "
      "never stops the others. `stream`: the engine's stream (not 0; None: the pipeline's).");
}

}  // namespace auxpy
