// Backends and device sequence states through the C ABI, with host readback.
#include <cstring>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"
#include "capi/c_state_use.h"
#include "gpu/qsa_block_pool_ref.h"

using auxstore::DevicePtr;
using auxstore::GpuBackend;
using auxstore::Kind;
using auxstore::Result;
using auxstore::Status;
using auxstore::capi::CopyOut;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NewHandle;
using auxstore::capi::NotNull;
using auxstore::capi::StateUse;

namespace {

// Copies `bytes` of host memory into a new device buffer, synchronously.
auxstore::Result<DevicePtr> UploadWeights(auxstore_backend_t& backend, const void* host,
                                          size_t bytes) {
  GpuBackend& gpu = *backend.gpu;
  AUXSTORE_ASSIGN_OR_RETURN(DevicePtr dev, gpu.Alloc(bytes));
  Status st = gpu.CopyH2DAsync({static_cast<const uint8_t*>(host), bytes}, dev, 0, backend.stream);
  if (st.ok()) st = gpu.Synchronize(backend.stream);
  if (!st.ok()) {
    (void)gpu.Free(dev);
    return st;
  }
  return dev;
}

// Releases the state, then frees what the handle owns; the first error wins.
// Idempotent: what was freed is null afterwards.
Status ReleaseAll(auxstore_state_t* s) {
  if (s->backend == nullptr) return Status::Ok();
  Status first = s->state ? s->state->Release() : Status::Ok();
  GpuBackend& gpu = *s->backend->gpu;
  for (DevicePtr p : {s->k_pool_k, s->k_norm_w}) {
    Status st = gpu.Free(p);
    if (first.ok() && !st.ok()) first = st;
  }
  s->k_pool_k = s->k_norm_w = auxstore::kNullDevicePtr;
  return first;
}

// The live backend a new state goes on; `out` checked.
Result<std::shared_ptr<auxstore_backend_t>> StateInputs(auxstore_backend_t* backend,
                                                        auxstore_state_t** out) {
  AUXSTORE_ASSIGN_OR_RETURN(auto b, Live(backend, "backend"));
  AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
  return b;
}

// A new state object on `backend` holding `state`.
std::shared_ptr<auxstore_state_t> NewState(std::shared_ptr<auxstore_backend_t> backend,
                                           std::unique_ptr<auxstore::SeqState> state) {
  auto s = std::make_shared<auxstore_state_t>();
  s->backend = std::move(backend);
  s->state = std::move(state);
  return s;
}

}  // namespace

auxstore_state_t::~auxstore_state_t() { (void)ReleaseAll(this); }

extern "C" {

int auxstore_qsa_block_pool_host(const auxstore_geometry_t* geometry, const void* raw_keys,
                                 uint64_t ingested, const void* k_pool_k, const void* k_norm_w,
                                 uint32_t n_blocks, void* block_keys_out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    for (auto [p, name] : {std::pair{raw_keys, "raw_keys"}, std::pair{k_pool_k, "k_pool_k"},
                           std::pair{k_norm_w, "k_norm_w"},
                           std::pair<const void*, const char*>{block_keys_out, "block_keys_out"}}) {
      AUXSTORE_RETURN_IF_ERROR(NotNull(p, name));
    }
    const uint32_t hd = geometry->qsa_hd;
    if (ingested > geometry->qsa_max_tokens) {
      return Status::OutOfRange("ingested " + std::to_string(ingested) + " > qsa_max_tokens");
    }
    auxstore::QsaBlockPoolArgs a;
    a.ingested = ingested;
    a.start = 0;
    a.n = n_blocks;
    a.ratio = geometry->qsa_ratio;
    a.hd = hd;
    a.rot = geometry->qsa_rot;
    a.theta = geometry->qsa_theta;
    a.eps = geometry->qsa_eps;
    const auto* raw = static_cast<const uint16_t*>(raw_keys);
    return auxstore::gpu::QsaBlockPoolReference(
        a, {raw, static_cast<size_t>(ingested) * hd}, {static_cast<const uint16_t*>(k_pool_k), hd},
        {static_cast<const uint16_t*>(k_norm_w), hd},
        {static_cast<uint16_t*>(block_keys_out), size_t{n_blocks} * hd});
  });
}

int auxstore_qsa_state_create(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const void* k_pool_k, const void* k_norm_w, auxstore_state_t** out,
                              char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, StateInputs(backend, out));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(k_pool_k, "k_pool_k"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(k_norm_w, "k_norm_w"));
    if (geometry->qsa_hd == 0) return Status::InvalidArgument("geometry has no QSA (qsa_hd is 0)");
    auto s = NewState(b, nullptr);
    s->qsa_hd = geometry->qsa_hd;
    GpuBackend& gpu = *b->gpu;
    const size_t weight_bytes = size_t{geometry->qsa_hd} * 2;
    auto q = UploadWeights(*b, k_pool_k, weight_bytes);
    if (!q.ok()) return q.status();
    s->k_pool_k = *q;
    auto w = UploadWeights(*b, k_norm_w, weight_bytes);
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
    *out = NewHandle(std::move(s));
    return Status::Ok();
  });
}

int auxstore_dsa_state_create(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, StateInputs(backend, out));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    if (geometry->dsa_index_head_dim == 0) {
      return Status::InvalidArgument("geometry has no DSA (dsa_index_head_dim is 0)");
    }
    AUXSTORE_ASSIGN_OR_RETURN(
        auto state, auxstore::DsaSeqState::Create(*b->gpu, auxstore::capi::ToDsa(*geometry)));
    *out = NewHandle(NewState(b, std::move(state)));
    return Status::Ok();
  });
}

int auxstore_opaque_state_create(auxstore_backend_t* backend, uint64_t capacity,
                                 auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, StateInputs(backend, out));
    AUXSTORE_ASSIGN_OR_RETURN(auto state, auxstore::OpaqueSeqState::Create(*b->gpu, capacity));
    *out = NewHandle(NewState(b, std::move(state)));
    return Status::Ok();
  });
}

int auxstore_qsa_state_borrow(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const auxstore_qsa_buffers_t* buffers, uint64_t ingested,
                              uint64_t pooled, auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, StateInputs(backend, out));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(buffers, "buffers"));
    if (geometry->qsa_hd == 0) return Status::InvalidArgument("geometry has no QSA (qsa_hd is 0)");
    const auxstore::QsaLayer layer{auxstore::capi::ToQsa(*geometry), buffers->k_pool_k,
                                   buffers->k_norm_w};
    const auxstore::QsaSeqState::Buffers bufs{buffers->raw_keys, buffers->raw_keys_bytes,
                                              buffers->block_keys, buffers->block_keys_bytes};
    AUXSTORE_ASSIGN_OR_RETURN(
        auto state, auxstore::QsaSeqState::Borrow(*b->gpu, layer, bufs, ingested, pooled));
    auto s = NewState(b, std::move(state));
    s->qsa_hd = geometry->qsa_hd;
    *out = NewHandle(std::move(s));
    return Status::Ok();
  });
}

int auxstore_dsa_state_borrow(auxstore_backend_t* backend, const auxstore_geometry_t* geometry,
                              const auxstore_dsa_buffers_t* buffers, uint64_t len,
                              auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, StateInputs(backend, out));
    AUXSTORE_RETURN_IF_ERROR(NotNull(geometry, "geometry"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(buffers, "buffers"));
    if (geometry->dsa_index_head_dim == 0) {
      return Status::InvalidArgument("geometry has no DSA (dsa_index_head_dim is 0)");
    }
    if (buffers->capacity_rows == 0 || buffers->capacity_rows > UINT32_MAX) {
      return Status::InvalidArgument("buffers->capacity_rows must be in 1..2^32-1");
    }
    const auxstore::DsaGeometry geo{geometry->dsa_index_head_dim,
                                    static_cast<uint32_t>(buffers->capacity_rows)};
    const auxstore::DsaSeqState::Buffers bufs{buffers->k_normed, buffers->k_normed_bytes,
                                              buffers->gate,     buffers->gate_bytes,
                                              buffers->valid,    buffers->valid_bytes};
    AUXSTORE_ASSIGN_OR_RETURN(auto state, auxstore::DsaSeqState::Borrow(*b->gpu, geo, bufs, len));
    *out = NewHandle(NewState(b, std::move(state)));
    return Status::Ok();
  });
}

int auxstore_opaque_state_borrow(auxstore_backend_t* backend, uint64_t buffer, uint64_t capacity,
                                 uint64_t size, auxstore_state_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, StateInputs(backend, out));
    AUXSTORE_ASSIGN_OR_RETURN(auto state,
                              auxstore::OpaqueSeqState::Borrow(*b->gpu, buffer, capacity, size));
    *out = NewHandle(NewState(b, std::move(state)));
    return Status::Ok();
  });
}

int auxstore_state_buffers(const auxstore_state_t* state, uint64_t ptrs[3], size_t* n,
                           char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const StateUse u, StateUse::Begin(state, "state"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(ptrs, "ptrs"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(n, "n"));
    switch (u->state->kind()) {
      case Kind::kQsa: {
        const auto& q = static_cast<const auxstore::QsaSeqState&>(*u->state);
        ptrs[0] = q.raw_keys();
        ptrs[1] = q.block_keys();
        *n = 2;
        break;
      }
      case Kind::kDsa: {
        const auto& d = static_cast<const auxstore::DsaSeqState&>(*u->state);
        ptrs[0] = d.k_normed();
        ptrs[1] = d.gate();
        ptrs[2] = d.valid();
        *n = 3;
        break;
      }
      case Kind::kOpaque:
        ptrs[0] = static_cast<const auxstore::OpaqueSeqState&>(*u->state).buffer();
        *n = 1;
        break;
    }
    return Status::Ok();
  });
}

int auxstore_state_is_borrowed(const auxstore_state_t* state) {
  const auto s = auxstore::capi::FindLive(state);
  if (s == nullptr) return 0;
  std::lock_guard lock(s->use_mu);
  return s->state != nullptr && !s->state->owned() ? 1 : 0;
}

int auxstore_state_set_counters(auxstore_state_t* state, uint64_t count, uint64_t pooled,
                                char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const StateUse u, StateUse::Begin(state, "state"));
    switch (u->state->kind()) {
      case Kind::kQsa:
        return static_cast<auxstore::QsaSeqState&>(*u->state).SetCounters(count, pooled);
      case Kind::kDsa:
        if (pooled != 0) return Status::InvalidArgument("pooled must be 0 for a DSA state");
        return static_cast<auxstore::DsaSeqState&>(*u->state).SetLen(count);
      case Kind::kOpaque:
        if (pooled != 0) return Status::InvalidArgument("pooled must be 0 for an opaque state");
        return static_cast<auxstore::OpaqueSeqState&>(*u->state).SetSize(count);
    }
    return Status::Internal("unknown state kind");
  });
}

int auxstore_state_release(auxstore_state_t* state, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    if (state == nullptr) return Status::Ok();
    AUXSTORE_ASSIGN_OR_RETURN(const auto s, Live(state, "state"));
    std::unique_ptr<auxstore::SeqState> released;
    {
      std::lock_guard lock(s->use_mu);
      if (s->state == nullptr) {  // another thread released it meanwhile
        return Status::InvalidArgument(
            auxstore::capi::NotLiveMessage("state", auxstore::capi::HandleKind::kState));
      }
      if (auxstore::capi::RestoreRunning(*s)) {
        return Status::Busy(
            "state is the target of a restore still running: release it once that restore is "
            "done (nothing was released)");
      }
      if (s->calls > 0) {
        return Status::Busy("state is in use by another call (nothing was released)");
      }
      // From here no call can use it (StateUse refuses a state without one).
      Status st = ReleaseAll(s.get());
      released = std::move(s->state);
      (void)auxstore::capi::Take(state);
      return st;
    }
  });
}

int auxstore_state_kind(const auxstore_state_t* state) {
  const auto s = auxstore::capi::FindLive(state);
  if (s == nullptr) return 0;
  std::lock_guard lock(s->use_mu);
  return s->state != nullptr ? static_cast<int>(s->state->kind()) : 0;
}

int auxstore_state_counters(const auxstore_state_t* state, uint64_t* count, uint64_t* pooled,
                            char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const StateUse u, StateUse::Begin(state, "state"));
    uint64_t c = 0, p = 0;
    switch (u->state->kind()) {
      case Kind::kQsa: {
        const auto& q = static_cast<const auxstore::QsaSeqState&>(*u->state);
        c = q.ingested();
        p = q.pooled();
        break;
      }
      case Kind::kDsa:
        c = static_cast<const auxstore::DsaSeqState&>(*u->state).len();
        break;
      case Kind::kOpaque:
        c = static_cast<const auxstore::OpaqueSeqState&>(*u->state).size();
        break;
    }
    if (count != nullptr) *count = c;
    if (pooled != nullptr) *pooled = p;
    return Status::Ok();
  });
}

int auxstore_state_load(auxstore_state_t* state, const void* blob, size_t size, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const StateUse u, StateUse::Begin(state, "state"));
    if (size > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(blob, "blob"));
    if (!u->state->fresh()) {
      return Status::InvalidArgument("state is not fresh (load only into a new state)");
    }
    const auxstore::StreamHandle stream = u->backend->stream;
    Status st = u->state->Restore({static_cast<const uint8_t*>(blob), size}, stream);
    // The copies read `blob`: it is the caller's again only after this.
    Status sync = u->backend->gpu->Synchronize(stream);
    return st.ok() ? sync : st;
  });
}

int auxstore_state_read(const auxstore_state_t* state, void** data, size_t* size, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const StateUse u, StateUse::Begin(state, "state"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(data, "data"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(size, "size"));
    AUXSTORE_ASSIGN_OR_RETURN(auto blob, u->state->Snapshot(u->backend->stream));
    return CopyOut(blob.data(), blob.size(), data, size);
  });
}

int auxstore_qsa_state_read_block_keys(const auxstore_state_t* state, void** data, size_t* size,
                                       char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const StateUse u, StateUse::Begin(state, "state"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(data, "data"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(size, "size"));
    if (u->state->kind() != Kind::kQsa) {
      return Status::InvalidArgument("state is " +
                                     std::string(auxstore::KindName(u->state->kind())) +
                                     ", not QSA: it has no block keys");
    }
    const auto& q = static_cast<const auxstore::QsaSeqState&>(*u->state);
    std::vector<uint8_t> keys(q.pooled() * u->qsa_hd * 2);
    if (!keys.empty()) {
      AUXSTORE_RETURN_IF_ERROR(
          u->backend->gpu->CopyD2HOnStream(q.block_keys(), 0, keys, u->backend->stream));
    }
    return CopyOut(keys.data(), keys.size(), data, size);
  });
}

}  // extern "C"
