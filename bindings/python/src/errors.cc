// Exceptions per status code, the translator from auxpy::Error, and the
// interpreter-exit and callback-thread guards.
#include <pybind11/eval.h>

#include <atomic>
#include <stdexcept>

#include "common.h"

namespace auxpy {

namespace {

// The exception classes, defined in Python so they are ordinary classes
// (picklable, subclassable, with `code`, `code_name` and `message`).
constexpr const char* kErrorSource = R"PY(
class AuxstoreError(Exception):
    """An auxstore call failed: `code` (AUXSTORE_* value), `code_name`
    ("NotFound", ...) and `message` (the C ABI's message, prefixed with the
    function name)."""
    code = 10
    code_name = "Internal"

    def __init__(self, message="", code=None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
            self.code_name = _code_name(code)

    def __str__(self):
        return "%s: %s" % (self.code_name, self.message)

    def __reduce__(self):
        return (type(self), (self.message, self.code))


def _make(name, code, code_name, bases, doc):
    return type(name, bases, {"code": code, "code_name": code_name, "__doc__": doc,
                              "__module__": "auxstore"})

NotFoundError = _make("NotFoundError", 1, "NotFound", (AuxstoreError, LookupError),
                      "No such snapshot, layer or namespace; a lookup found none.")
CorruptionError = _make("CorruptionError", 2, "Corruption", (AuxstoreError,),
                        "Stored or supplied bytes fail a check (checksum, blob layout).")
InvalidArgumentError = _make("InvalidArgumentError", 3, "InvalidArgument",
                             (AuxstoreError, ValueError),
                             "A bad argument: unknown kind, bad size, wrong geometry, ...")
OutOfRangeError = _make("OutOfRangeError", 4, "OutOfRange", (AuxstoreError, ValueError),
                        "A size or count beyond what the target (or the output buffer) holds.")
CapacityError = _make("CapacityError", 5, "Capacity", (AuxstoreError,),
                      "The store or a queue is full: the call was shed.")
IoError = _make("IoError", 6, "IOError", (AuxstoreError, OSError),
                "The file system failed.")
BusyError = _make("BusyError", 7, "Busy", (AuxstoreError,),
                  "Another handle (in this or another process) holds the store for writing.")
UnavailableError = _make("UnavailableError", 8, "Unavailable", (AuxstoreError,),
                         "The handle cannot serve this now (read-only, fenced, cancelled, "
                         "no CUDA device).")
NotSupportedError = _make("NotSupportedError", 9, "NotSupported", (AuxstoreError,),
                          "Not supported by this build.")
InternalError = _make("InternalError", 10, "Internal", (AuxstoreError,),
                      "A bug, or an exception caught at the C boundary.")
AuxstoreError.__module__ = "auxstore"

ERRORS = {1: NotFoundError, 2: CorruptionError, 3: InvalidArgumentError, 4: OutOfRangeError,
          5: CapacityError, 6: IoError, 7: BusyError, 8: UnavailableError,
          9: NotSupportedError, 10: InternalError}
)PY";

// Strong references for the life of the process (never decref'd at exit).
PyObject* g_errors[11] = {};
PyObject* g_base_error = nullptr;

std::atomic<bool> g_exiting{false};

}  // namespace

thread_local int t_done_callback = 0;
thread_local int t_log_callback = 0;

bool PythonGone() {
  if (g_exiting.load(std::memory_order_acquire)) return true;
  if (!Py_IsInitialized()) return true;
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

void MarkExiting() { g_exiting.store(true, std::memory_order_release); }

void ForbidInLogCallback() {
  if (t_log_callback > 0) {
    throw std::runtime_error(
        "auxstore was called from its own log callback, which must not call auxstore");
  }
}

void ForbidBlockingInCallback(const char* what) {
  ForbidInLogCallback();
  if (t_done_callback > 0) {
    throw std::runtime_error(std::string(what) +
                             " cannot run on a restore's completion thread (a future's "
                             "callback): it would wait on that thread; hand the work to "
                             "another thread");
  }
}

py::object MakeError(int code, const std::string& message) {
  PyObject* cls = (code >= 1 && code <= 10) ? g_errors[code] : g_base_error;
  py::object inst = py::reinterpret_borrow<py::object>(cls)(
      py::reinterpret_steal<py::object>(
          PyUnicode_DecodeUTF8(message.data(), static_cast<Py_ssize_t>(message.size()), "replace")),
      code);
  return inst;
}

void RegisterErrors(py::module_& m) {
  py::dict ns;
  ns["__builtins__"] = py::module_::import("builtins");
  ns["__name__"] = "auxstore";
  ns["_code_name"] =
      py::cpp_function([](int code) { return std::string(auxstore_code_name(code)); });
  py::exec(kErrorSource, ns);
  g_base_error = ns["AuxstoreError"].ptr();
  Py_INCREF(g_base_error);
  m.attr("AuxstoreError") = ns["AuxstoreError"];
  py::dict errors = ns["ERRORS"];
  for (auto item : errors) {
    const int code = item.first.cast<int>();
    g_errors[code] = item.second.ptr();
    Py_INCREF(g_errors[code]);
    m.attr(item.second.attr("__name__")) = item.second;
  }
  m.attr("ERRORS") = errors;

  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      py::object inst = MakeError(e.code, e.message);
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(inst.ptr())), inst.ptr());
    }
  });

  m.def(
      "error_for_code",
      [](int code) -> py::object {
        PyObject* cls = (code >= 1 && code <= 10) ? g_errors[code] : g_base_error;
        return py::reinterpret_borrow<py::object>(cls);
      },
      py::arg("code"), "The AuxstoreError subclass raised for status `code`.");
  m.def(
      "_raise", [](int code, const std::string& message) { throw Error(code, message); },
      py::arg("code"), py::arg("message"), "Raises what a failed call with `code` raises (tests).");
}

}  // namespace auxpy
