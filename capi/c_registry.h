// The C ABI's handle table: every handle the C ABI hands out is a token (a
// slot index and a generation), never the address of the object behind it.
// A token is looked up under one process-wide lock; a closed, released or
// never-issued token (a double close, a use after close, a stray pointer)
// finds nothing and the call fails with InvalidArgument instead of touching
// freed memory. A slot reused later gets a new generation, so an old token
// never reaches the new object. Objects are shared_ptrs: a call in flight,
// or a handle that depends on another (a pipeline on its store and backend,
// a state on its backend), keeps the object alive after its own handle is
// gone. Internal to capi/.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "auxstore/status.h"

namespace auxstore::capi {

enum class HandleKind : uint8_t {
  kOptions = 1,
  kStore = 2,
  kBackend = 3,
  kState = 4,
  kPipeline = 5,
  kRestore = 6,
  kHostBuffer = 7,
  kHostRead = 8,
  kRestoreBatch = 9,
};

// The C type's name, e.g. "auxstore_t".
const char* HandleKindName(HandleKind kind);

// Untyped table operations (c_registry.cc); the typed ones below wrap them.
uint64_t InsertHandle(HandleKind kind, std::shared_ptr<void> object);
std::shared_ptr<void> FindHandle(uint64_t token, HandleKind kind);
std::shared_ptr<void> TakeHandle(uint64_t token, HandleKind kind);

// Counts a void call (close, destroy, release, cancel) given a handle that
// is not live and writes one warning to stderr for it (each distinct
// warning once per process): auxstore_misuse_count() reads the count.
void ReportMisuse(const char* fn, const void* handle, HandleKind kind);

template <typename T>
struct HandleTraits;  // kind: the HandleKind of T (c_handles.h)

// A new handle for `object`; the token, typed as the C handle.
template <typename T>
T* NewHandle(std::shared_ptr<T> object) {
  const uint64_t token = InsertHandle(HandleTraits<T>::kind, std::move(object));
  return reinterpret_cast<T*>(static_cast<uintptr_t>(token));
}

// The object behind a live handle, or null (NULL, closed, never issued, or
// a handle of another type).
template <typename T>
std::shared_ptr<T> FindLive(const T* handle) {
  if (handle == nullptr) return nullptr;
  return std::static_pointer_cast<T>(
      FindHandle(reinterpret_cast<uintptr_t>(handle), HandleTraits<T>::kind));
}

// Like FindLive, but as a Status naming the argument: "<name> is NULL" or
// "<name> is not a live <type> handle (already closed or released, or never
// created)".
template <typename T>
Result<std::shared_ptr<T>> Live(const T* handle, const char* name) {
  if (handle == nullptr) return Status::InvalidArgument(std::string(name) + " is NULL");
  std::shared_ptr<T> object = FindLive(handle);
  if (object == nullptr) {
    return Status::InvalidArgument(std::string(name) + " is not a live " +
                                   HandleKindName(HandleTraits<T>::kind) +
                                   " handle (already closed or released, or never created)");
  }
  return object;
}

// Removes the handle: the returned object (null when the handle was not
// live) goes when the last reference to it does.
template <typename T>
std::shared_ptr<T> Take(const T* handle) {
  if (handle == nullptr) return nullptr;
  return std::static_pointer_cast<T>(
      TakeHandle(reinterpret_cast<uintptr_t>(handle), HandleTraits<T>::kind));
}

// The message Live gives for a handle that is not live (for Take's callers).
std::string NotLiveMessage(const char* name, HandleKind kind);

}  // namespace auxstore::capi
