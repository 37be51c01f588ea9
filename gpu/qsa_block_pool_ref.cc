#include "gpu/qsa_block_pool_ref.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gpu/bf16.h"
#include "gpu/qsa_block_pool_args.h"

namespace auxstore::gpu {

Status QsaBlockPoolReference(const QsaBlockPoolArgs& a, std::span<const uint16_t> raw_keys,
                             std::span<const uint16_t> k_pool_k, std::span<const uint16_t> k_norm_w,
                             std::span<uint16_t> block_keys) {
  QsaBlockPoolArgs checked = a;
  // The spans stand in for the device pointers, which may be unset here.
  checked.raw_keys = checked.k_pool_k = checked.k_norm_w = checked.block_keys = 1;
  AUXSTORE_ASSIGN_OR_RETURN(QsaBlockPoolExtents ext, CheckQsaBlockPoolArgs(checked));
  if (raw_keys.size_bytes() < ext.raw_key_bytes || block_keys.size_bytes() < ext.block_key_bytes ||
      k_pool_k.size_bytes() < ext.vector_bytes || k_norm_w.size_bytes() < ext.vector_bytes) {
    return Status::OutOfRange("qsa_block_pool: a buffer is smaller than the launch's extent");
  }

  const uint32_t hd = a.hd, ratio = a.ratio, half = a.rot / 2;
  const float sqrt_hd = std::sqrt(static_cast<float>(hd));
  std::vector<float> q(hd), w(hd), s(ratio), p(hd), y(hd), freq(half);
  for (uint32_t d = 0; d < hd; ++d) {
    q[d] = Bf16ToFloat(k_pool_k[d]);
    w[d] = Bf16ToFloat(k_norm_w[d]);
  }
  for (uint32_t j = 0; j < half; ++j) {
    freq[j] = static_cast<float>(
        std::pow(static_cast<double>(a.theta), -2.0 * j / static_cast<double>(a.rot)));
  }

  for (uint64_t b = a.start; b < uint64_t{a.start} + a.n; ++b) {
    const uint16_t* rows = raw_keys.data() + b * ratio * hd;
    float m = -std::numeric_limits<float>::infinity();
    for (uint32_t i = 0; i < ratio; ++i) {
      float dot = 0.0f;
      for (uint32_t d = 0; d < hd; ++d) dot += Bf16ToFloat(rows[i * hd + d]) * q[d];
      s[i] = dot / sqrt_hd;
      m = std::fmax(m, s[i]);
    }
    float sum = 0.0f;
    for (uint32_t i = 0; i < ratio; ++i) {
      s[i] = std::exp(s[i] - m);
      sum += s[i];
    }
    for (uint32_t i = 0; i < ratio; ++i) s[i] = s[i] / sum;

    for (uint32_t d = 0; d < hd; ++d) {
      float acc = 0.0f;
      for (uint32_t i = 0; i < ratio; ++i) acc += s[i] * Bf16ToFloat(rows[i * hd + d]);
      p[d] = acc;
    }
    float sq = 0.0f;
    for (uint32_t d = 0; d < hd; ++d) sq += p[d] * p[d];
    const float denom = std::sqrt(sq / static_cast<float>(hd) + a.eps);
    for (uint32_t d = 0; d < hd; ++d) y[d] = (p[d] * w[d]) / denom;

    const float pos = static_cast<float>(b * ratio);
    for (uint32_t j = 0; j < half; ++j) {
      const float ang = pos * freq[j];
      const float c = std::cos(ang), sn = std::sin(ang);
      const float x = y[j], z = y[j + half];
      y[j] = x * c - z * sn;
      y[j + half] = z * c + x * sn;
    }
    uint16_t* out = block_keys.data() + b * hd;
    for (uint32_t d = 0; d < hd; ++d) out[d] = FloatToBf16(y[d]);
  }
  return Status::Ok();
}

}  // namespace auxstore::gpu
