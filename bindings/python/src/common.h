// The Python module `auxstore._auxstore` over the C ABI (include/auxstore/c.h):
// what its translation units share. docs/python.md has the rules.
//
// Every handle (Store, Backend, State, Pipeline, RestoreHandle) is a C++
// object held by std::shared_ptr (Python's reference and the children that
// need it alive). A handle is closed explicitly (close(), a `with` block) or
// when its last reference goes; closing a parent closes its children first
// (restore handles, then pipelines, then states), so the C ABI's teardown
// order holds whatever order Python drops things in.
//
// The GIL is released around every call into the C ABI. Calls on one handle
// take its lock shared; close takes it exclusively, so a handle is never
// closed under a call in flight. Python objects are only touched with the
// GIL held.
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

#include "args.h"
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

// ---- buffers ------------------------------------------------------------------

// A C-contiguous span of an object's memory, held for the life of this
// object (a buffer-protocol export, or a CPU torch tensor kept referenced).
// Construct and destroy with the GIL; read ptr/len without it.
class Buffer {
 public:
  Buffer() = default;
  Buffer(py::handle obj, bool writable, const std::string& what);
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  Buffer(const Buffer&) = delete;
  ~Buffer();

  void* ptr() const { return ptr_; }
  size_t len() const { return len_; }
  // A reference that keeps the memory exported (a memoryview, or the tensor).
  py::object Keeper() const;

 private:
  Py_buffer view_{};
  bool have_view_ = false;
  py::object hold_;  // the torch tensor, when that is what it is
  void* ptr_ = nullptr;
  size_t len_ = 0;
};

using Prefix = std::array<uint8_t, 16>;

// A prefix: 16 bytes of any buffer, or 32 hex digits.
Prefix ToPrefix(py::handle obj, const char* what = "prefix");
// Many prefixes: a (n, 16) uint8 buffer, or an iterable of prefixes.
std::vector<Prefix> ToPrefixes(py::handle obj, const char* what = "prefixes");
py::bytes PrefixBytes(const Prefix& p);
py::bytes PrefixBytes(const uint8_t* p);

// Tokens: a buffer of integers (any integer format) or an iterable of ints.
std::vector<uint32_t> ToTokens(py::handle obj);

// A blob kind: 1..3 or "qsa" / "dsa" / "opaque".
uint32_t ToKind(py::handle obj, const std::string& what = "kind");
// An element type: AUXSTORE_DTYPE_* or a name ("f32", "float32", "bfloat16",
// numpy / torch dtypes through their str()).
uint32_t ToDType(py::handle obj);
// Label set for the exposition: None, a str (as is) or a dict (escaped).
std::string ToLabels(py::handle obj);
std::string EscapeLabelValue(const std::string& v);

// A memoryview over memory auxstore_malloc'd (freed with auxstore_free when
// the last view goes): no copy on the way out.
py::object OwnedView(void* data, size_t size);
void RegisterBuffers(py::module_& m);

// ---- handles --------------------------------------------------------------------

class Store;
class Backend;
class State;
class Pipeline;
class RestoreHandle;

// A list of weak references to children, pruned as it grows.
template <typename T>
class Children {
 public:
  void Add(const std::shared_ptr<T>& c) {
    std::lock_guard lk(mu_);
    if (list_.size() >= 64 && list_.size() % 64 == 0) {
      std::erase_if(list_, [](const std::weak_ptr<T>& w) { return w.expired(); });
    }
    list_.push_back(c);
  }
  std::vector<std::shared_ptr<T>> Take() {
    std::lock_guard lk(mu_);
    std::vector<std::shared_ptr<T>> out;
    for (auto& w : list_) {
      if (auto s = w.lock()) out.push_back(std::move(s));
    }
    list_.clear();
    return out;
  }

 private:
  std::mutex mu_;
  std::vector<std::weak_ptr<T>> list_;
};

// Pipelines being destroyed off a restore's completion thread (a pipeline
// cannot be destroyed from its own thread): the store and backend wait for
// them before closing.
class DeferredCount {
 public:
  void Add() {
    std::lock_guard lk(mu_);
    ++n_;
  }
  void Done() {
    {
      std::lock_guard lk(mu_);
      --n_;
    }
    cv_.notify_all();
  }
  void Wait() {
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return n_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_ = 0;
};

// The log callback's context: the Python callable, alive while the store is.
struct LogContext {
  py::object fn;
};

class Store {
 public:
  Store(py::object path, uint64_t capacity_bytes, uint64_t ttl_seconds, py::object chunk_bytes,
        py::object durability, bool read_only, bool create_if_missing, py::object log,
        int log_level);
  ~Store();

  void Close();  // GIL held (Python's close)
  bool closed();
  const std::string& path() const { return path_; }
  uint32_t chunk_bytes() const { return chunk_bytes_; }
  bool read_only() const { return read_only_; }

  // Runs f(db) with the store's lock shared, GIL released by the caller.
  template <typename F>
  auto With(F&& f) {
    ForbidInLogCallback();
    auto lk = LockShared(mu_, "store");
    if (db_ == nullptr) throw py::value_error("the store is closed");
    return f(db_);
  }
  std::shared_lock<std::shared_mutex> LockOpen();  // throws when closed
  auxstore_t* raw() const { return db_; }          // only under LockOpen()

  void AddPipeline(const std::shared_ptr<Pipeline>& p) { pipelines_.Add(p); }
  DeferredCount& deferred() { return deferred_; }

 private:
  void CloseNoGil();

  DeferredCount deferred_;
  std::shared_mutex mu_;
  auxstore_t* db_ = nullptr;
  std::unique_ptr<LogContext> log_;  // freed after auxstore_close, with the GIL
  Children<Pipeline> pipelines_;
  std::string path_;
  uint32_t chunk_bytes_ = 4u << 20;
  bool read_only_ = false;
};

class Backend : public std::enable_shared_from_this<Backend> {
 public:
  Backend(py::object kind, py::object device);
  ~Backend();

  void Close();
  bool closed();
  int kind();
  int device();
  std::string name();

  template <typename F>
  auto With(F&& f) {
    ForbidInLogCallback();
    auto lk = LockShared(mu_, "backend");
    if (b_ == nullptr) throw py::value_error("the backend is closed");
    return f(b_);
  }
  std::shared_lock<std::shared_mutex> LockOpen();
  auxstore_backend_t* raw() const { return b_; }  // only under LockOpen()

  void AddState(const std::shared_ptr<State>& s) { states_.Add(s); }
  void AddPipeline(const std::shared_ptr<Pipeline>& p) { pipelines_.Add(p); }
  // Keeps `keeper` referenced until `stream` is synchronized (GIL held).
  void KeepUntilSynced(uint64_t stream, py::object keeper);
  void DropKept(uint64_t stream);  // GIL held
  DeferredCount& deferred() { return deferred_; }

 private:
  void CloseNoGil();

  DeferredCount deferred_;
  std::shared_mutex mu_;
  auxstore_backend_t* b_ = nullptr;
  Children<Pipeline> pipelines_;
  Children<State> states_;
  std::mutex kept_mu_;  // (and the GIL) for kept_
  std::vector<std::pair<uint64_t, py::object>> kept_;
};

class State {
 public:
  State(std::shared_ptr<Backend> backend, auxstore_state_t* s)
      : backend_(std::move(backend)), s_(s) {}
  ~State();

  void Close();  // GIL held
  void CloseNoGil();
  bool closed();

  // Runs f(s) once no restore owns the state, under its lock (GIL released
  // by the caller).
  template <typename F>
  auto With(F&& f) {
    ForbidInLogCallback();
    std::unique_lock lk(mu_);
    cv_.wait(lk, [&] { return busy_ == 0; });
    if (s_ == nullptr) throw py::value_error("the state is closed");
    return f(s_);
  }
  // Marks it owned by a restore (throws when closed or already owned).
  auxstore_state_t* BeginRestore();
  void EndRestore();
  const std::shared_ptr<Backend>& backend() const { return backend_; }
  // Locks it once idle (no restore owns it); *out receives the handle.
  std::unique_lock<std::mutex> LockIdle(auxstore_state_t** out);

 private:
  std::shared_ptr<Backend> backend_;
  std::mutex mu_;
  std::condition_variable cv_;
  int busy_ = 0;
  auxstore_state_t* s_ = nullptr;
};

// What a restore's done callback completes: the result, the targets it
// owns until then, and the Python future.
struct RestoreOp {
  std::mutex mu;
  std::condition_variable cv;
  bool finished = false;  // the C done callback recorded the result
  bool resolved = false;  // ... and resolved the future (or gave up on Python)
  int code = AUXSTORE_OK;
  std::string message;
  std::vector<std::shared_ptr<State>> targets;
  py::object future;  // GIL

  ~RestoreOp();
  void Finish(int c, const char* m);  // no GIL
  void Resolve();                     // GIL held
  void Abandon();                     // the interpreter is gone
  void WaitResolved();                // no GIL
};

// The C done callback of every restore started from Python: `arg` is a
// heap-allocated std::shared_ptr<RestoreOp>.
void RestoreDone(void* arg, int code, const char* message);

class Pipeline : public std::enable_shared_from_this<Pipeline> {
 public:
  Pipeline(std::shared_ptr<Store> store, std::shared_ptr<Backend> backend, auxstore_pipeline_t* p)
      : store_(std::move(store)), backend_(std::move(backend)), p_(p) {}
  ~Pipeline();

  void Close();  // GIL held
  void CloseNoGil();
  bool closed();

  template <typename F>
  auto With(F&& f) {
    ForbidInLogCallback();
    auto lk = LockShared(mu_, "pipeline");
    if (p_ == nullptr) throw py::value_error("the pipeline is closed");
    return f(p_);
  }
  std::shared_lock<std::shared_mutex> LockOpen();
  auxstore_pipeline_t* raw() const { return p_; }  // only under LockOpen()
  void AddRestore(const std::shared_ptr<RestoreHandle>& h) { restores_.Add(h); }
  const std::shared_ptr<Store>& store() const { return store_; }
  const std::shared_ptr<Backend>& backend() const { return backend_; }

 private:
  std::shared_ptr<Store> store_;
  std::shared_ptr<Backend> backend_;
  std::shared_mutex mu_;
  auxstore_pipeline_t* p_ = nullptr;
  Children<RestoreHandle> restores_;
};

class RestoreHandle {
 public:
  RestoreHandle(std::shared_ptr<Pipeline> p, std::shared_ptr<RestoreOp> op,
                auxstore_restore_handle_t* h)
      : pipeline_(std::move(p)), op_(std::move(op)), h_(h) {}
  ~RestoreHandle();

  void Close();
  void CloseNoGil();
  bool closed();
  template <typename F>
  auto With(F&& f) {
    ForbidInLogCallback();
    auto lk = LockShared(mu_, "restore handle");
    if (h_ == nullptr) throw py::value_error("the restore handle is closed");
    return f(h_);
  }
  const std::shared_ptr<RestoreOp>& op() const { return op_; }
  const std::shared_ptr<Pipeline>& pipeline() const { return pipeline_; }

 private:
  std::shared_ptr<Pipeline> pipeline_;
  std::shared_ptr<RestoreOp> op_;
  std::shared_mutex mu_;
  auxstore_restore_handle_t* h_ = nullptr;
};

void RegisterStore(py::module_& m);
void RegisterDevice(py::module_& m);
void RegisterPipeline(py::module_& m);

}  // namespace auxpy
