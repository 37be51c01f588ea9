// CPU reference of qsa_block_pool: the ground truth the CUDA kernel matches.
#pragma once

#include <cstdint>
#include <span>

#include "auxstore/gpu_backend.h"

namespace auxstore::gpu {

// Host views of the buffers of one launch; `args`' pointers are ignored, its
// sizes and parameters are used. Checks the arguments and that every span
// holds its extent first; a refused launch writes nothing.
//
// Math (design.md section 2), fp32 throughout, in this operation order (the
// CUDA kernel repeats it): s_i = dot(raw[t_i], k_pool_k) / sqrt(hd), summed
// over d in order; softmax with max subtracted; p_d = sum_i w_i raw[t_i][d];
// y_d = (p_d * w_d) / sqrt(sum_d(p_d^2) / hd + eps); rotate-half RoPE on
// [0, rot) at pos = b*ratio with f_j = fp32(theta^(-2j/rot) computed in
// fp64) so both implementations get the same frequencies, a = pos * f_j in
// fp32; outputs rounded to bf16 (nearest even).
Status QsaBlockPoolReference(const QsaBlockPoolArgs& args, std::span<const uint16_t> raw_keys,
                             std::span<const uint16_t> k_pool_k, std::span<const uint16_t> k_norm_w,
                             std::span<uint16_t> block_keys);

}  // namespace auxstore::gpu
