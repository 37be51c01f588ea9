// Status codes and messages across the C ABI.
#include "capi/c_errors.h"

#include <cstdlib>

#include "auxstore/c.h"

namespace auxstore::capi {

static_assert(AUXSTORE_OK == int(StatusCode::kOk));
static_assert(AUXSTORE_NOT_FOUND == int(StatusCode::kNotFound));
static_assert(AUXSTORE_CORRUPTION == int(StatusCode::kCorruption));
static_assert(AUXSTORE_INVALID_ARGUMENT == int(StatusCode::kInvalidArgument));
static_assert(AUXSTORE_OUT_OF_RANGE == int(StatusCode::kOutOfRange));
static_assert(AUXSTORE_CAPACITY == int(StatusCode::kCapacity));
static_assert(AUXSTORE_IO_ERROR == int(StatusCode::kIOError));
static_assert(AUXSTORE_BUSY == int(StatusCode::kBusy));
static_assert(AUXSTORE_UNAVAILABLE == int(StatusCode::kUnavailable));
static_assert(AUXSTORE_NOT_SUPPORTED == int(StatusCode::kNotSupported));
static_assert(AUXSTORE_INTERNAL == int(StatusCode::kInternal));

int Report(const char* fn, const Status& st, char** errmsg) {
  if (st.ok()) return AUXSTORE_OK;
  if (errmsg != nullptr) {
    std::free(*errmsg);
    const std::string text = std::string(fn) + ": " + st.message();
    *errmsg = static_cast<char*>(std::malloc(text.size() + 1));
    if (*errmsg != nullptr) std::memcpy(*errmsg, text.c_str(), text.size() + 1);
  }
  return static_cast<int>(st.code());
}

Status NotNull(const void* p, const char* name) {
  if (p != nullptr) return Status::Ok();
  return Status::InvalidArgument(std::string(name) + " is NULL");
}

Status CopyOut(const void* src, size_t n, void** data, size_t* size) {
  void* out = std::malloc(n == 0 ? 1 : n);
  if (out == nullptr) return Status::Internal("out of memory for " + std::to_string(n) + " bytes");
  if (n > 0) std::memcpy(out, src, n);
  *data = out;
  *size = n;
  return Status::Ok();
}

}  // namespace auxstore::capi

extern "C" {

const char* auxstore_code_name(int code) {
  if (code < AUXSTORE_OK || code > AUXSTORE_INTERNAL) return "Unknown";
  // StatusCodeName returns views of string literals: NUL-terminated.
  return auxstore::StatusCodeName(static_cast<auxstore::StatusCode>(code)).data();
}

void auxstore_free(void* ptr) { std::free(ptr); }

}  // extern "C"
