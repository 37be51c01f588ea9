// What the C ABI's opaque handles stand for. A C handle is a token in the
// handle table (capi/c_registry.h); these are the objects behind them,
// shared so that a handle depending on another keeps it alive: a pipeline
// its store and backend, a state its backend, a restore handle its
// pipeline. Every object is destroyed on a caller's thread (the last
// release), never on a pipeline or backend thread. Internal to capi/.
#pragma once

#include <boost/asio/thread_pool.hpp>
#include <memory>
#include <mutex>
#include <string>

#include "auxstore/gpu_backend.h"
#include "auxstore/gpu_pipeline.h"
#include "auxstore/seq_state.h"
#include "auxstore/store.h"
#include "capi/c_registry.h"

struct auxstore_options_t {
  auxstore::Options options;
};

struct auxstore_t {
  std::unique_ptr<auxstore::Store> store;
  auxstore::Options options;  // as opened (the pipeline sizes staging from it)
  // The pool batched host reads run on (c_host_reads.cc), made on first
  // use. Declared after `store`: joined before the store closes.
  std::once_flag host_pool_once;
  std::unique_ptr<boost::asio::thread_pool> host_pool;
};

struct auxstore_backend_t {
  std::unique_ptr<auxstore::GpuBackend> gpu;
  std::string name;  // NUL-terminated copy of gpu->name()
  // The stream the C ABI's own synchronous calls (weights upload, state
  // load and readback) use: never the legacy default stream.
  auxstore::StreamHandle stream = auxstore::kDefaultStream;
  ~auxstore_backend_t() {
    if (gpu && stream != auxstore::kDefaultStream) (void)gpu->DestroyStream(stream);
  }
};

struct auxstore_state_t {
  // Declared first: destroyed last, after the state's buffers are freed.
  std::shared_ptr<auxstore_backend_t> backend;
  std::unique_ptr<auxstore::SeqState> state;
  // QSA only: the layer weights the state was created with, owned here
  // (null for a borrowed state: the engine's).
  auxstore::DevicePtr k_pool_k = auxstore::kNullDevicePtr;
  auxstore::DevicePtr k_norm_w = auxstore::kNullDevicePtr;
  uint32_t qsa_hd = 0;

  // Who is using the state (capi/c_state_use.h), under use_mu: calls in
  // flight, and the restore that targets it (marked from before it starts
  // until it is done). Release is refused while either is.
  std::mutex use_mu;
  uint64_t calls = 0;
  bool restore_marked = false;
  uint64_t restore_gen = 0;                            // which marking
  std::shared_ptr<auxstore::RestoreHandle> restoring;  // once started

  ~auxstore_state_t();  // frees what Release did not (c_states.cc)
};

struct auxstore_pipeline_t {
  // Declared first: destroyed after the pipeline, which uses both.
  std::shared_ptr<auxstore_t> db;
  std::shared_ptr<auxstore_backend_t> backend;
  std::unique_ptr<auxstore::GpuPipeline> pipeline;
};

struct auxstore_restore_handle_t {
  std::shared_ptr<auxstore_pipeline_t> pipeline;  // kept until the handle goes
  std::shared_ptr<auxstore::RestoreHandle> handle;
};

namespace auxstore::capi {
template <>
struct HandleTraits<auxstore_options_t> {
  static constexpr HandleKind kind = HandleKind::kOptions;
};
template <>
struct HandleTraits<auxstore_t> {
  static constexpr HandleKind kind = HandleKind::kStore;
};
template <>
struct HandleTraits<auxstore_backend_t> {
  static constexpr HandleKind kind = HandleKind::kBackend;
};
template <>
struct HandleTraits<auxstore_state_t> {
  static constexpr HandleKind kind = HandleKind::kState;
};
template <>
struct HandleTraits<auxstore_pipeline_t> {
  static constexpr HandleKind kind = HandleKind::kPipeline;
};
template <>
struct HandleTraits<auxstore_restore_handle_t> {
  static constexpr HandleKind kind = HandleKind::kRestore;
};
template <>
struct HandleTraits<auxstore_host_buffer_t> {
  static constexpr HandleKind kind = HandleKind::kHostBuffer;
};
template <>
struct HandleTraits<auxstore_host_read_t> {
  static constexpr HandleKind kind = HandleKind::kHostRead;
};
}  // namespace auxstore::capi
