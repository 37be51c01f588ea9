// The handles: Store, Backend, State, Pipeline, RestoreHandle (C++ objects
// held by std::shared_ptr over the C ABI's handles), and what they share.
#pragma once

#include "args.h"
#include "buffers.h"
#include "errors.h"

namespace auxpy {

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

// A C handle behind a shared mutex, the one place the "closed" checks live:
// calls run under the lock held shared (With, LockOpen) and raise ValueError
// ("the store is closed") once the handle is gone; a close takes the lock
// exclusively (Lock) and takes the handle (Take), so a handle is never closed
// under a call in flight.
template <typename Raw>
class Handle {
 public:
  explicit Handle(const char* what) : what_(what) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;

  // Runs f(raw) under the shared lock (the caller released the GIL).
  template <typename F>
  auto With(F&& f) {
    auto lk = LockOpen();
    return f(raw_);
  }
  // The shared lock, held while the handle is open; throws when closed.
  std::shared_lock<std::shared_mutex> LockOpen() {
    ForbidInLogCallback();
    auto lk = LockShared(mu_, what_);
    if (raw_ == nullptr) throw py::value_error(std::string("the ") + what_ + " is closed");
    return lk;
  }
  // True once closed, or (on a restore's completion thread) while being closed.
  bool closed() {
    bool c = false;
    WithoutGil([&] {
      std::shared_lock<std::shared_mutex> lk(mu_, std::defer_lock);
      if (t_done_callback > 0 ? !lk.try_lock() : (lk.lock(), false)) {
        c = true;
        return;
      }
      c = raw_ == nullptr;
    });
    return c;
  }
  Raw* raw() const { return raw_; }  // only under LockOpen()

 protected:
  std::unique_lock<std::shared_mutex> Lock() { return std::unique_lock<std::shared_mutex>(mu_); }
  // Under Lock(): the handle, now closed (nullptr when it already was).
  Raw* Take() {
    Raw* r = raw_;
    raw_ = nullptr;
    return r;
  }
  void Set(Raw* r) { raw_ = r; }
  bool open() const { return raw_ != nullptr; }  // under Lock()

 private:
  std::shared_mutex mu_;
  Raw* raw_ = nullptr;
  const char* what_;
};

// The log callback's context: the Python callable, alive while the store is.
struct LogContext {
  py::object fn;
};

class Store : public Handle<auxstore_t> {
 public:
  Store(py::object path, uint64_t capacity_bytes, uint64_t ttl_seconds, py::object chunk_bytes,
        py::object durability, bool read_only, bool create_if_missing, py::object log,
        int log_level, const std::string& shared = "", const std::string& shared_write = "through",
        uint32_t read_lanes = 0, bool shared_local_copies = true);
  ~Store();

  void Close();  // GIL held (Python's close)
  const std::string& path() const { return path_; }
  uint32_t chunk_bytes() const { return chunk_bytes_; }
  bool read_only() const { return read_only_; }

  void AddPipeline(const std::shared_ptr<Pipeline>& p) { pipelines_.Add(p); }
  DeferredCount& deferred() { return deferred_; }

 private:
  void CloseNoGil();

  DeferredCount deferred_;
  std::unique_ptr<LogContext> log_;  // freed after auxstore_close, with the GIL
  Children<Pipeline> pipelines_;
  std::string path_;
  uint32_t chunk_bytes_ = 4u << 20;
  bool read_only_ = false;
};

class Backend : public Handle<auxstore_backend_t>, public std::enable_shared_from_this<Backend> {
 public:
  Backend(py::object kind, py::object device);
  ~Backend();

  void Close();
  int kind();
  int device();
  std::string name();

  void AddState(const std::shared_ptr<State>& s) { states_.Add(s); }
  void AddPipeline(const std::shared_ptr<Pipeline>& p) { pipelines_.Add(p); }
  // Keeps `keeper` referenced until `stream` is synchronized (GIL held).
  void KeepUntilSynced(uint64_t stream, py::object keeper);
  void DropKept(uint64_t stream);  // GIL held
  DeferredCount& deferred() { return deferred_; }

 private:
  void CloseNoGil();

  DeferredCount deferred_;
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
struct DoneCtx {
  std::shared_ptr<RestoreOp> op;
};

class Pipeline : public Handle<auxstore_pipeline_t>, public std::enable_shared_from_this<Pipeline> {
 public:
  Pipeline(std::shared_ptr<Store> store, std::shared_ptr<Backend> backend, auxstore_pipeline_t* p)
      : Handle("pipeline"), store_(std::move(store)), backend_(std::move(backend)) {
    Set(p);
  }
  ~Pipeline();

  void Close();  // GIL held
  void CloseNoGil();

  void AddRestore(const std::shared_ptr<RestoreHandle>& h) { restores_.Add(h); }
  const std::shared_ptr<Store>& store() const { return store_; }
  const std::shared_ptr<Backend>& backend() const { return backend_; }

 private:
  std::shared_ptr<Store> store_;
  std::shared_ptr<Backend> backend_;
  Children<RestoreHandle> restores_;
};

class RestoreHandle : public Handle<auxstore_restore_handle_t> {
 public:
  RestoreHandle(std::shared_ptr<Pipeline> p, std::shared_ptr<RestoreOp> op,
                auxstore_restore_handle_t* h)
      : Handle("restore handle"), pipeline_(std::move(p)), op_(std::move(op)) {
    Set(h);
  }
  ~RestoreHandle();

  void Close();
  void CloseNoGil();
  const std::shared_ptr<RestoreOp>& op() const { return op_; }
  const std::shared_ptr<Pipeline>& pipeline() const { return pipeline_; }

 private:
  std::shared_ptr<Pipeline> pipeline_;
  std::shared_ptr<RestoreOp> op_;
};

}  // namespace auxpy
