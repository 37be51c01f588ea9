// auxstore.Store, the handle: open (options, the log hook) and close.
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <optional>

#include "common.h"

namespace auxpy {

namespace {

// Delivers one log record to the Python callable, from any auxstore or
// RocksDB thread: takes the GIL, and never lets an exception escape.
void LogTrampoline(void* arg, int level, const char* source, const char* message) {
  if (arg == nullptr || PythonGone()) return;
  auto* ctx = static_cast<LogContext*>(arg);
  PyGILState_STATE st = PyGILState_Ensure();
  ++t_log_callback;
  PyObject* src =
      PyUnicode_DecodeUTF8(source, static_cast<Py_ssize_t>(std::strlen(source)), "replace");
  PyObject* msg =
      PyUnicode_DecodeUTF8(message, static_cast<Py_ssize_t>(std::strlen(message)), "replace");
  PyObject* r = nullptr;
  if (src != nullptr && msg != nullptr) {
    r = PyObject_CallFunction(ctx->fn.ptr(), "iOO", level, src, msg);
  }
  if (r == nullptr) PyErr_WriteUnraisable(ctx->fn.ptr());  // sys.unraisablehook
  Py_XDECREF(r);
  Py_XDECREF(src);
  Py_XDECREF(msg);
  --t_log_callback;
  PyGILState_Release(st);
}

struct OptionsDeleter {
  void operator()(auxstore_options_t* o) const { auxstore_options_destroy(o); }
};

int ToDurability(py::handle d) {
  if (py::isinstance<py::str>(d)) {
    const std::string s = d.cast<std::string>();
    if (s == "sync") return AUXSTORE_SYNC;
    if (s == "async") return AUXSTORE_ASYNC;
    throw py::value_error("durability '" + s + "' is neither 'sync' nor 'async'");
  }
  return ToInt(d, "durability");
}

}  // namespace

// ---- Store ------------------------------------------------------------------------

Store::Store(py::object path, uint64_t capacity_bytes, uint64_t ttl_seconds, py::object chunk_bytes,
             py::object durability, bool read_only, bool create_if_missing, py::object log,
             int log_level, const std::string& shared, const std::string& shared_write,
             uint32_t read_lanes, bool shared_local_copies)
    : Handle("store") {
  ForbidInLogCallback();
  py::object fs = py::module_::import("os").attr("fsdecode")(path);
  path_ = fs.cast<std::string>();
  CheckNoNul(path_, "path");
  read_only_ = read_only;
  std::unique_ptr<auxstore_options_t, OptionsDeleter> o(auxstore_options_create());
  if (!o) throw std::bad_alloc();
  Check([&](char** e) { return auxstore_options_set_capacity_bytes(o.get(), capacity_bytes, e); });
  Check([&](char** e) { return auxstore_options_set_ttl_seconds(o.get(), ttl_seconds, e); });
  if (!chunk_bytes.is_none()) {
    chunk_bytes_ = ToU32(chunk_bytes, "chunk_bytes");
    Check([&](char** e) { return auxstore_options_set_chunk_bytes(o.get(), chunk_bytes_, e); });
  }
  Check([&](char** e) { return auxstore_options_set_read_lanes(o.get(), read_lanes, e); });
  const int d = ToDurability(durability);
  Check([&](char** e) { return auxstore_options_set_durability(o.get(), d, e); });
  Check([&](char** e) { return auxstore_options_set_read_only(o.get(), read_only ? 1 : 0, e); });
  Check([&](char** e) {
    return auxstore_options_set_create_if_missing(o.get(), create_if_missing ? 1 : 0, e);
  });
  if (!shared.empty()) {
    CheckNoNul(shared, "shared");
    if (shared_write != "through" && shared_write != "behind") {
      throw py::value_error("shared_write '" + shared_write +
                            "' is neither 'through' nor 'behind'");
    }
    const int mode = shared_write == "through" ? AUXSTORE_SHARED_THROUGH : AUXSTORE_SHARED_BEHIND;
    Check([&](char** e) {
      return auxstore_options_set_shared(o.get(), shared.c_str(), mode, 256ull << 20, 0, e);
    });
  }
  Check([&](char** e) {
    return auxstore_options_set_shared_local_copies(o.get(), shared_local_copies ? 1 : 0, e);
  });
  if (!log.is_none()) {
    if (!PyCallable_Check(log.ptr())) {
      if (!py::hasattr(log, "log")) {
        throw py::type_error(
            "log must be a callable (level, source, message) or a "
            "logging.Logger");
      }
      log = py::module_::import("auxstore._logsupport").attr("log_to")(log);
    }
    log_ = std::make_unique<LogContext>();
    log_->fn = log;
    Check([&](char** e) {
      return auxstore_options_set_log_callback(o.get(), LogTrampoline, log_.get(), log_level, e);
    });
  }
  auxstore_t* db = nullptr;
  char* err = nullptr;
  int rc;
  {
    py::gil_scoped_release release;  // the open may log (the callback takes the GIL)
    rc = auxstore_open(path_.c_str(), o.get(), &db, &err);
  }
  if (rc != AUXSTORE_OK) {
    std::string m = err != nullptr ? err : auxstore_code_name(rc);
    auxstore_free(err);
    log_.reset();
    throw Error(rc, m);
  }
  Set(db);
}

Store::~Store() {
  WithoutGil([&] { CloseNoGil(); });
  if (log_) {
    LogContext* l = log_.release();
    if (!WithGil([&] { delete l; })) {
      // The interpreter is gone: the callable is leaked, not decref'd.
    }
  }
}

void Store::CloseNoGil() {
  auto lk = Lock();
  deferred_.Wait();
  if (!open()) return;
  for (auto& p : pipelines_.Take()) p->CloseNoGil();
  auxstore_close(Take());  // may log: the callback takes the GIL, released here
}

void Store::Close() {
  ForbidBlockingInCallback("Store.close");
  {
    py::gil_scoped_release release;
    CloseNoGil();
  }
  log_.reset();
}

}  // namespace auxpy
