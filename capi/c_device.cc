// Backends, device memory and streams through the C ABI.
#include <string>

#include "auxstore/c.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"

using auxstore::Status;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NotNull;

namespace {

Status CreateBackend(int kind, int device, auxstore_backend_t** out) {
  AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
  if (kind < AUXSTORE_BACKEND_AUTO || kind > AUXSTORE_BACKEND_CUDA) {
    return Status::InvalidArgument("backend kind " + std::to_string(kind) +
                                   " is not AUTO (0), HOST (1) or CUDA (2)");
  }
  AUXSTORE_ASSIGN_OR_RETURN(
      auto gpu, auxstore::CreateBackend(static_cast<auxstore::BackendKind>(kind), device));
  auto b = std::make_shared<auxstore_backend_t>();
  b->name = std::string(gpu->name());
  AUXSTORE_ASSIGN_OR_RETURN(b->stream, gpu->CreateStream());
  b->gpu = std::move(gpu);
  *out = auxstore::capi::NewHandle(std::move(b));
  return Status::Ok();
}

}  // namespace

extern "C" {

int auxstore_backend_create(int kind, auxstore_backend_t** out, char** errmsg) {
  return Guard(__func__, errmsg, [&] { return CreateBackend(kind, -1, out); });
}

int auxstore_backend_create_on_device(int kind, int device, auxstore_backend_t** out,
                                      char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    if (device < 0) {
      return Status::InvalidArgument("device " + std::to_string(device) + " is negative");
    }
    return CreateBackend(kind, device, out);
  });
}

// The backend goes here unless a state or pipeline still uses it (then with
// the last of them).
void auxstore_backend_destroy(auxstore_backend_t* backend) {
  if (backend == nullptr) return;
  try {
    if (auxstore::capi::Take(backend) == nullptr) {
      auxstore::capi::ReportMisuse(__func__, backend, auxstore::capi::HandleKind::kBackend);
    }
  } catch (...) {  // out of memory for the warning: nothing to do
  }
}

int auxstore_backend_kind(const auxstore_backend_t* backend) {
  const auto b = auxstore::capi::FindLive(backend);
  return b != nullptr ? static_cast<int>(b->gpu->kind()) : -1;
}

int auxstore_backend_device(const auxstore_backend_t* backend) {
  const auto b = auxstore::capi::FindLive(backend);
  return b != nullptr ? b->gpu->device() : -1;
}

// Valid while the handle is live: the table holds the backend meanwhile.
const char* auxstore_backend_name(const auxstore_backend_t* backend) {
  const auto b = auxstore::capi::FindLive(backend);
  return b != nullptr ? b->name.c_str() : "";
}

int auxstore_device_alloc(auxstore_backend_t* backend, size_t bytes, uint64_t* ptr_out,
                          char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(ptr_out, "ptr_out"));
    AUXSTORE_ASSIGN_OR_RETURN(*ptr_out, b->gpu->Alloc(bytes));
    return Status::Ok();
  });
}

int auxstore_device_free(auxstore_backend_t* backend, uint64_t ptr, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    return b->gpu->Free(ptr);
  });
}

int auxstore_device_copy_h2d(auxstore_backend_t* backend, uint64_t ptr, uint64_t offset,
                             const void* src, size_t bytes, uint64_t stream, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    if (bytes > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(src, "src"));
    return b->gpu->CopyH2DAsync({static_cast<const uint8_t*>(src), bytes}, ptr, offset, stream);
  });
}

int auxstore_device_copy_d2h(auxstore_backend_t* backend, void* dst, uint64_t ptr, uint64_t offset,
                             size_t bytes, uint64_t stream, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    if (bytes > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(dst, "dst"));
    return b->gpu->CopyD2HOnStream(ptr, offset, {static_cast<uint8_t*>(dst), bytes}, stream);
  });
}

int auxstore_stream_create(auxstore_backend_t* backend, uint64_t* stream_out, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(stream_out, "stream_out"));
    AUXSTORE_ASSIGN_OR_RETURN(*stream_out, b->gpu->CreateStream());
    return Status::Ok();
  });
}

int auxstore_stream_destroy(auxstore_backend_t* backend, uint64_t stream, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    if (stream == b->stream) {
      return Status::InvalidArgument("stream is the backend's own; it goes with the backend");
    }
    return b->gpu->DestroyStream(stream);
  });
}

int auxstore_stream_synchronize(auxstore_backend_t* backend, uint64_t stream, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto b, Live(backend, "backend"));
    return b->gpu->Synchronize(stream);
  });
}

}  // extern "C"
