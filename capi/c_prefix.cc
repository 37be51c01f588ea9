// Chained prefix hashes and token digests through the C ABI.
#include <cstring>
#include <string>

#include "auxstore/c.h"
#include "auxstore/prefix.h"
#include "capi/c_errors.h"

using auxstore::Status;
using auxstore::capi::Guard;
using auxstore::capi::NotNull;

extern "C" {

int auxstore_prefix_hash(const uint32_t* tokens, size_t n_tokens, uint32_t block_size,
                         uint64_t salt, uint8_t (*out)[16], size_t capacity, size_t* n_out,
                         char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    if (n_tokens > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(tokens, "tokens"));
    if (capacity > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(n_out, "n_out"));
    if (block_size == 0) return Status::InvalidArgument("block_size is 0, must be > 0");
    const size_t count = n_tokens / block_size;
    *n_out = count;
    if (count > capacity) {
      return Status::OutOfRange(std::to_string(n_tokens) + " tokens at block size " +
                                std::to_string(block_size) + " make " + std::to_string(count) +
                                " prefixes, more than the capacity of " + std::to_string(capacity));
    }
    const auto prefixes = auxstore::PrefixHashes({tokens, n_tokens}, block_size, salt);
    for (size_t i = 0; i < prefixes.size(); ++i) std::memcpy(out[i], prefixes[i].bytes.data(), 16);
    return Status::Ok();
  });
}

int auxstore_token_digest(const uint32_t* tokens, size_t n_tokens, uint64_t salt, uint8_t out[16],
                          char** errmsg) {
  return Guard(__func__, errmsg, [&]() -> Status {
    if (n_tokens > 0) AUXSTORE_RETURN_IF_ERROR(NotNull(tokens, "tokens"));
    AUXSTORE_RETURN_IF_ERROR(NotNull(out, "out"));
    const auxstore::TokenDigest d = auxstore::DigestTokens({tokens, n_tokens}, salt);
    std::memcpy(out, d.bytes.data(), 16);
    return Status::Ok();
  });
}

}  // extern "C"
