// Backends and device sequence states through the C ABI, with host readback.
#include <cstring>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"

using auxstore::DevicePtr;
using auxstore::GpuBackend;
using auxstore::Kind;
using auxstore::Status;
using auxstore::capi::CopyOut;
using auxstore::capi::Guard;
using auxstore::capi::NotNull;

namespace {

// Copies `bytes` of host memory into a new device buffer, synchronously.
auxstore::Result<DevicePtr> UploadWeights(GpuBackend& gpu, const void* host, size_t bytes) {
  AUXSTORE_ASSIGN_OR_RETURN(DevicePtr dev, gpu.Alloc(bytes));
  Status st = gpu.CopyH2DAsync({static_cast<const uint8_t*>(host), bytes}, dev, 0,
                               auxstore::kDefaultStream);
  if (st.ok()) st = gpu.Synchronize(auxstore::kDefaultStream);
  if (!st.ok()) {
    (void)gpu.Free(dev);
    return st;
  }
  return dev;
}

// Releases the state, then frees what the handle owns; the first error wins.
Status ReleaseAll(auxstore_state_t* s) {
  Status first = s->state ? s->state->Release() : Status::Ok();
  GpuBackend& gpu = *s->backend->gpu;
  for (DevicePtr p : {s->k_pool_k, s->k_norm_w}) {
    Status st = gpu.Free(p);
    if (first.ok() && !st.ok()) first = st;
  }
  s->k_pool_k = s->k_norm_w = auxstore::kNullDevicePtr;
  return first;
}

Status StateInputs(auxstore_backend_t* backend, auxstore_state_t** out) {
  AUXSTORE_RETURN_IF_ERROR(NotNull(backend, "backend"));
  return NotNull(out, "out");
}

}  // namespace

extern "C" {

int auxstore_backend_create(int kind, auxstore_backend_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    if (kind < AUXSTORE_BACKEND_AUTO || kind > AUXSTORE_BACKEND_CUDA) {
      return Status::InvalidArgument("backend kind " + std::to_string(kind) +
                                     " is not AUTO (0), HOST (1) or CUDA (2)");
    }
    AUXSTORE_ASSIGN_OR_RETURN(auto gpu,
                              auxstore::CreateBackend(static_cast<auxstore::BackendKind>(kind)));
    auto b = std::make_unique<auxstore_backend_t>();
    b->name = std::string(gpu->name());
    b->gpu = std::move(gpu);
    *out = b.release();
    return Status::Ok();
  });
}

void auxstore_backend_destroy(auxstore_backend_t* backend) { delete backend; }

int auxstore_backend_kind(const auxstore_backend_t* backend) {
  return backend != nullptr ? static_cast<int>(backend->gpu->kind()) : -1;
}

const char* auxstore_backend_name(const auxstore_backend_t* backend) {
  return backend != nullptr ? backend->name.c_str() : "";
}

int auxstore_qsa_state_create(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const void* k_pool_k, const void* k_norm_w, auxstore_state_t** out,
                              char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(StateInputs(backend, out));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(k_pool_k, "k_pool_k"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(k_norm_w, "k_norm_w"));
    if (geometry->qsa_hd == 0) return Status::InvalidArgument("geometry has no QSA (qsa_hd is 0)");
    auto s = std::make_unique<auxstore_state_t>();
    s->backend = backend;
    s->qsa_hd = geometry->qsa_hd;
    GpuBackend& gpu = *backend->gpu;
    const size_t weight_bytes = size_t{geometry->qsa_hd} * 2;
    auto q = UploadWeights(gpu, k_pool_k, weight_bytes);
    if (!q.ok()) return q.status();
    s->k_pool_k = *q;
    auto w = UploadWeights(gpu, k_norm_w, weight_bytes);
    if (!w.ok()) {
      (void)ReleaseAll(s.get());
      return w.status();
    }
    s->k_norm_w = *w;
    auto state = auxstore::QsaSeqState::Create(
        gpu, {auxstore::capi::ToQsa(*geometry), s->k_pool_k, s->k_norm_w});
    if (!state.ok()) {
      (void)ReleaseAll(s.get());
      return state.status();
    }
    s->state = std::move(*state);
    *out = s.release();
    return Status::Ok();
  });
}

int auxstore_dsa_state_create(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(StateInputs(backend, out));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    if (geometry->dsa_index_head_dim == 0) {
      return Status::InvalidArgument("geometry has no DSA (dsa_index_head_dim is 0)");
    }
    AUXSTORE_ASSIGN_OR_RETURN(
        auto state, auxstore::DsaSeqState::Create(*backend->gpu, auxstore::capi::ToDsa(*geometry)));
    auto s = std::make_unique<auxstore_state_t>();
    s->backend = backend;
    s->state = std::move(state);
    *out = s.release();
    return Status::Ok();
  });
}

int auxstore_opaque_state_create(auxstore_backend_t* backend, uint64_t capacity,
                                 auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(StateInputs(backend, out));
    AUXSTORE_ASSIGN_OR_RETURN(auto state,
                              auxstore::OpaqueSeqState::Create(*backend->gpu, capacity));
    auto s = std::make_unique<auxstore_state_t>();
    s->backend = backend;
    s->state = std::move(state);
    *out = s.release();
    return Status::Ok();
  });
}

int auxstore_state_release(auxstore_state_t* state, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    if (state == nullptr) return Status::Ok();
    std::unique_ptr<auxstore_state_t> owned(state);
    return ReleaseAll(owned.get());
  });
}

int auxstore_state_kind(const auxstore_state_t* state) {
  return state != nullptr ? static_cast<int>(state->state->kind()) : 0;
}

int auxstore_state_counters(const auxstore_state_t* state, uint64_t* count, uint64_t* pooled,
                            char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(state, "state"));
    uint64_t c = 0, p = 0;
    switch (state->state->kind()) {
      case Kind::kQsa: {
        const auto& q = static_cast<const auxstore::QsaSeqState&>(*state->state);
        c = q.ingested();
        p = q.pooled();
        break;
      }
      case Kind::kDsa:
        c = static_cast<const auxstore::DsaSeqState&>(*state->state).len();
        break;
      case Kind::kOpaque:
        c = static_cast<const auxstore::OpaqueSeqState&>(*state->state).size();
        break;
    }
    if (count != nullptr) *count = c;
    if (pooled != nullptr) *pooled = p;
    return Status::Ok();
  });
}

int auxstore_state_load(auxstore_state_t* state, const void* blob, size_t size, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(state, "state"));
    if (size > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(blob, "blob"));
    if (!state->state->fresh()) {
      return Status::InvalidArgument("state is not fresh (load only into a new state)");
    }
    AUXSTORE_RETURN_IF_ERROR(
        state->state->Restore({static_cast<const uint8_t*>(blob), size}, auxstore::kDefaultStream));
    // The copies read `blob`: it is the caller's again only after this.
    return state->backend->gpu->Synchronize(auxstore::kDefaultStream);
  });
}

int auxstore_state_read(const auxstore_state_t* state, void** data, size_t* size, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(state, "state"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(data, "data"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(size, "size"));
    AUXSTORE_ASSIGN_OR_RETURN(auto blob, state->state->Snapshot(auxstore::kDefaultStream));
    return CopyOut(blob.data(), blob.size(), data, size);
  });
}

int auxstore_qsa_state_read_block_keys(const auxstore_state_t* state, void** data, size_t* size,
                                       char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(state, "state"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(data, "data"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(size, "size"));
    if (state->state->kind() != Kind::kQsa) {
      return Status::InvalidArgument("state is " +
                                     std::string(auxstore::KindName(state->state->kind())) +
                                     ", not QSA: it has no block keys");
    }
    const auto& q = static_cast<const auxstore::QsaSeqState&>(*state->state);
    std::vector<uint8_t> keys(q.pooled() * state->qsa_hd * 2);
    if (!keys.empty()) {
      AUXSTORE_RETURN_IF_ERROR(
          state->backend->gpu->CopyD2HOnStream(q.block_keys(), 0, keys, auxstore::kDefaultStream));
    }
    return CopyOut(keys.data(), keys.size(), data, size);
  });
}

}  // extern "C"
