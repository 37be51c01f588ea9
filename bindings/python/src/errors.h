// Status codes to exceptions, the interpreter-exit and callback-thread
// guards, and GIL helpers.
#pragma once

#include <pybind11/pybind11.h>

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <utility>
#include <vector>

#include "auxstore/c.h"

namespace py = pybind11;

namespace auxpy {

// ---- errors ------------------------------------------------------------------

// An auxstore status carried out of a GIL-free region; the registered
// translator raises the AuxstoreError subclass of `code` from it.
struct Error : std::exception {
  Error(int c, std::string m) : code(c), message(std::move(m)) {}
  const char* what() const noexcept override { return message.c_str(); }
  int code;
  std::string message;
};

// Runs `call(&errmsg)` (a C ABI call returning a status code); throws Error
// on failure, freeing the message. Safe without the GIL.
template <typename Call>
void Check(Call&& call) {
  char* err = nullptr;
  const int rc = call(&err);
  if (rc != AUXSTORE_OK) {
    std::string m = err != nullptr ? err : auxstore_code_name(rc);
    auxstore_free(err);
    throw Error(rc, std::move(m));
  }
}

// The same, returning the code instead of throwing for `allowed`.
template <typename Call>
int CheckAllowing(int allowed, Call&& call) {
  char* err = nullptr;
  const int rc = call(&err);
  if (rc != AUXSTORE_OK) {
    std::string m = err != nullptr ? err : auxstore_code_name(rc);
    auxstore_free(err);
    if (rc == allowed) return rc;
    throw Error(rc, std::move(m));
  }
  return rc;
}

// An instance of the AuxstoreError subclass for `code` (GIL held).
py::object MakeError(int code, const std::string& message);
void RegisterErrors(py::module_& m);

// ---- the interpreter and callback threads -------------------------------------

// True once the interpreter is exiting (atexit ran, or finalizing): callbacks
// from auxstore threads then stop touching Python.
bool PythonGone();
void MarkExiting();

// Set while a thread runs a restore's done callback / a log callback.
extern thread_local int t_done_callback;
extern thread_local int t_log_callback;

// RuntimeError when called from a log callback (which must not call
// auxstore), or, for a call that waits on a pipeline, from a done callback
// (a pipeline thread waiting on itself).
void ForbidInLogCallback();
void ForbidBlockingInCallback(const char* what);

// Runs `f` with the GIL released when this thread holds it.
template <typename F>
void WithoutGil(F&& f) {
  if (PyGILState_Check()) {
    py::gil_scoped_release release;
    f();
  } else {
    f();
  }
}

// Drops Python references (runs `f`) with the GIL, taking it if this thread
// does not hold it; when the interpreter is gone, returns false and does
// nothing (the caller leaks the references instead).
template <typename F>
bool WithGil(F&& f) {
  if (PyGILState_Check()) {
    f();
    return true;
  }
  if (PythonGone()) return false;
  PyGILState_STATE s = PyGILState_Ensure();
  f();
  PyGILState_Release(s);
  return true;
}

// A shared lock on a handle. On a restore's completion thread it does not
// wait (a close holding the lock may be waiting on this very thread): a
// handle being closed there raises ValueError.
inline std::shared_lock<std::shared_mutex> LockShared(std::shared_mutex& mu, const char* what) {
  std::shared_lock<std::shared_mutex> lk(mu, std::defer_lock);
  if (t_done_callback > 0) {
    if (!lk.try_lock()) throw py::value_error(std::string("the ") + what + " is being closed");
  } else {
    lk.lock();
  }
  return lk;
}

}  // namespace auxpy
