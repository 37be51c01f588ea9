// Launch-time checks of a qsa_block_pool call, shared by every backend.
#pragma once

#include <cstdint>

#include "auxstore/gpu_backend.h"

namespace auxstore::gpu {

// Bytes each buffer must hold for a launch (valid once the args check).
struct QsaBlockPoolExtents {
  uint64_t raw_key_bytes = 0;    // (start+n)*ratio rows of hd bf16
  uint64_t block_key_bytes = 0;  // (start+n) rows of hd bf16
  uint64_t vector_bytes = 0;     // hd bf16 (k_pool_k, k_norm_w)
};

// InvalidArgument for: a null buffer; hd, ratio or n zero; rot odd or > hd;
// theta not finite or <= 0 when rot > 0; eps negative or not finite; OutOfRange
// when (start+n)*ratio > ingested (overflow-checked).
Result<QsaBlockPoolExtents> CheckQsaBlockPoolArgs(const QsaBlockPoolArgs& args);

}  // namespace auxstore::gpu
