// auxstore_put_options_t checked and converted to PutOptions: one place for
// auxstore_put_snapshot_ex and the puts from registered memory.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "auxstore/c.h"
#include "auxstore/store.h"
#include "capi/c_convert.h"

namespace auxstore::capi {

// `o` (NULL: none) into `put`; the chain is copied into `chain`, which
// put->block_chain views (re-point it if `chain` moves). `name` names the
// argument in errors.
inline Status ToPutOptions(const auxstore_put_options_t* o, const std::string& name,
                           std::vector<Prefix>* chain, PutOptions* put) {
  if (o == nullptr) return Status::Ok();
  if (o->struct_size < sizeof(auxstore_put_options_t)) {
    return Status::InvalidArgument(name + "->struct_size is " + std::to_string(o->struct_size) +
                                   ", expected sizeof(auxstore_put_options_t)");
  }
  if (o->token_digest != nullptr) {
    TokenDigest digest;
    std::memcpy(digest.bytes.data(), o->token_digest, 16);
    put->token_digest = digest;
  }
  if (o->n_blocks > 0 && o->block_chain == nullptr) {
    return Status::InvalidArgument(name + "->block_chain is NULL");
  }
  chain->clear();
  chain->reserve(o->n_blocks);
  for (size_t i = 0; i < o->n_blocks; ++i) chain->push_back(ToPrefix(o->block_chain[i]));
  put->block_chain = *chain;
  put->block_size = o->block_size;
  return Status::Ok();
}

}  // namespace auxstore::capi
