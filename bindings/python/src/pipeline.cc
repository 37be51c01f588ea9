// auxstore.Pipeline and auxstore.RestoreHandle, the handles, and the restore
// futures' completion (RestoreOp, the C done callback).
#include <thread>

#include "common.h"

namespace auxpy {

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
  auto lk = Lock();
  if (!open()) return;
  // Handles go before their pipeline (and backend); their restores go on.
  for (auto& h : restores_.Take()) h->CloseNoGil();
  auxstore_pipeline_t* p = Take();
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

// ---- RestoreHandle -------------------------------------------------------------------------

RestoreHandle::~RestoreHandle() {
  WithoutGil([&] { CloseNoGil(); });
}

void RestoreHandle::CloseNoGil() {
  auto lk = Lock();
  if (!open()) return;
  auxstore_restore_handle_release(Take());  // a running restore goes on
}

void RestoreHandle::Close() {
  ForbidInLogCallback();
  py::gil_scoped_release release;
  CloseNoGil();
}

}  // namespace auxpy
