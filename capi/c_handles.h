// What the C ABI's opaque handles hold. Internal to capi/.
#pragma once

#include <memory>
#include <string>

#include "auxstore/gpu_backend.h"
#include "auxstore/gpu_pipeline.h"
#include "auxstore/seq_state.h"
#include "auxstore/store.h"

struct auxstore_options_t {
  auxstore::Options options;
};

struct auxstore_t {
  std::unique_ptr<auxstore::Store> store;
  auxstore::Options options;  // as opened (the pipeline sizes staging from it)
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
  auxstore_backend_t* backend = nullptr;
  std::unique_ptr<auxstore::SeqState> state;
  // QSA only: the layer weights the state was created with, owned here
  // (null for a borrowed state: the engine's).
  auxstore::DevicePtr k_pool_k = auxstore::kNullDevicePtr;
  auxstore::DevicePtr k_norm_w = auxstore::kNullDevicePtr;
  uint32_t qsa_hd = 0;
};

struct auxstore_pipeline_t {
  auxstore_backend_t* backend = nullptr;
  std::unique_ptr<auxstore::GpuPipeline> pipeline;
};

struct auxstore_restore_handle_t {
  std::shared_ptr<auxstore::RestoreHandle> handle;
};
