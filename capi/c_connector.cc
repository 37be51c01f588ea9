// The connector's batched calls through the C ABI (issue 24,
// docs/connectors.md): consecutive-hit counts over prefixes and over a
// chain's pages, a lookup that leases every hit, a batched release, and row
// ranges of a layer.
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "capi/c_convert.h"
#include "capi/c_errors.h"
#include "capi/c_handles.h"

using auxstore::Prefix;
using auxstore::Status;
using auxstore::capi::Guard;
using auxstore::capi::Live;
using auxstore::capi::NotNull;
using auxstore::capi::ToPrefix;

namespace {

// `n` C prefixes (NULL only when n is 0) as Prefixes.
auxstore::Result<std::vector<Prefix>> ToPrefixes(const uint8_t (*prefixes)[16], size_t n,
                                                 const char* name) {
  if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(prefixes, name));
  std::vector<Prefix> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(ToPrefix(prefixes[i]));
  return out;
}

}  // namespace

extern "C" {

int auxstore_count_leading_stored(auxstore_t* db, uint64_t ns, const uint8_t (*prefixes)[16],
                                  size_t n, size_t* count, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(count, "count"));
    AUXSTORE_ASSIGN_OR_RETURN(const auto ps, ToPrefixes(prefixes, n, "prefixes"));
    AUXSTORE_ASSIGN_OR_RETURN(*count, d->store->CountLeadingStored(ns, ps));
    return Status::Ok();
  });
}

int auxstore_count_leading_pages(auxstore_t* db, uint64_t ns, const uint8_t (*block_chain)[16],
                                 size_t n_blocks, uint32_t block_size, size_t* pages,
                                 uint32_t* page_tokens, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(pages, "pages"));
    AUXSTORE_ASSIGN_OR_RETURN(const auto chain, ToPrefixes(block_chain, n_blocks, "block_chain"));
    AUXSTORE_ASSIGN_OR_RETURN(const auto got, d->store->CountLeadingPages(ns, chain, block_size));
    *pages = got.pages;
    if (page_tokens != nullptr) *page_tokens = got.page_tokens;
    return Status::Ok();
  });
}

int auxstore_lookup_leased(auxstore_t* db, uint64_t ns, const uint8_t (*prefixes)[16], size_t n,
                           uint64_t lease_ms, uint64_t* leases, size_t* leading, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(leases, "leases"));
    AUXSTORE_ASSIGN_OR_RETURN(const auto ps, ToPrefixes(prefixes, n, "prefixes"));
    AUXSTORE_ASSIGN_OR_RETURN(auto got, d->store->LookupAndLease(ns, ps, lease_ms));
    for (size_t i = 0; i < n; ++i) leases[i] = got.leases[i];
    if (leading != nullptr) *leading = got.leading;
    return Status::Ok();
  });
}

int auxstore_lease_release_many(auxstore_t* db, const uint64_t* leases, size_t n, size_t* released,
                                char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    if (n > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(leases, "leases"));
    size_t count = 0;
    Status first_error;
    for (size_t i = 0; i < n; ++i) {
      if (leases[i] == 0) continue;
      const Status s = d->store->ReleaseLease(leases[i]);
      if (s.ok()) {
        ++count;
      } else if (!s.IsNotFound() && first_error.ok()) {
        first_error = s.WithContext("leases[" + std::to_string(i) + "]");
      }
    }
    if (released != nullptr) *released = count;
    return first_error;
  });
}

int auxstore_read_layer_rows(auxstore_t* db, uint64_t ns, const uint8_t prefix[16], uint32_t layer,
                             uint64_t first_row, uint64_t last_row, void* dst, size_t capacity,
                             size_t* size, uint64_t* rows, char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    AUXSTORE_ASSIGN_OR_RETURN(const auto d, Live(db, "db"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(prefix, "prefix"));
    if (capacity > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(dst, "dst"));
    AUXSTORE_ASSIGN_OR_RETURN(
        const auto got, d->store->ReadLayerRows(ns, ToPrefix(prefix), layer, first_row, last_row,
                                                {static_cast<uint8_t*>(dst), capacity}));
    if (size != nullptr) *size = got.bytes;
    if (rows != nullptr) *rows = got.rows;
    return Status::Ok();
  });
}

}  // extern "C"
