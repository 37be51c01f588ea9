// How the C ABI reports errors: status codes, malloc'd messages, and a guard
// that keeps every exception on this side of extern "C".
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>

#include "auxstore/status.h"

namespace auxstore::capi {

// Stores `st`'s message, prefixed with `fn`, in *errmsg (when errmsg is not
// NULL), freeing what was there. Returns st's code as an int.
int Report(const char* fn, const Status& st, char** errmsg);

// InvalidArgument "<name> is NULL" when `p` is NULL.
Status NotNull(const void* p, const char* name);

// Runs `body` (returning Status); any exception becomes AUXSTORE_INTERNAL.
template <typename Body>
int Guard(const char* fn, char** errmsg, Body&& body) noexcept {
  try {
    return Report(fn, body(), errmsg);
  } catch (const std::bad_alloc&) {
    return Report(fn, Status::Internal("out of memory"), errmsg);
  } catch (const std::exception& e) {
    return Report(fn, Status::Internal(std::string("unexpected exception: ") + e.what()), errmsg);
  } catch (...) {
    return Report(fn, Status::Internal("unexpected exception"), errmsg);
  }
}

// A malloc'd copy of `n` bytes (at least one byte allocated, so never NULL
// on success) in *data, its length in *size; Internal when out of memory.
Status CopyOut(const void* src, size_t n, void** data, size_t* size);

}  // namespace auxstore::capi
