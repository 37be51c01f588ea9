#include "gpu/qsa_block_pool_args.h"

#include <cmath>
#include <string>

namespace auxstore::gpu {

namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

bool MulOverflows(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}

}  // namespace

Result<QsaBlockPoolExtents> CheckQsaBlockPoolArgs(const QsaBlockPoolArgs& a) {
  if (a.raw_keys == kNullDevicePtr || a.k_pool_k == kNullDevicePtr ||
      a.k_norm_w == kNullDevicePtr || a.block_keys == kNullDevicePtr) {
    return Status::InvalidArgument("qsa_block_pool: a buffer is null");
  }
  if (a.hd == 0 || a.ratio == 0 || a.n == 0) {
    return Status::InvalidArgument("qsa_block_pool: hd " + Num(a.hd) + ", ratio " + Num(a.ratio) +
                                   " and n " + Num(a.n) + " must all be non-zero");
  }
  if (a.rot % 2 != 0 || a.rot > a.hd) {
    return Status::InvalidArgument("qsa_block_pool: rot " + Num(a.rot) +
                                   " must be even and <= hd " + Num(a.hd));
  }
  if (a.rot > 0 && !(std::isfinite(a.theta) && a.theta > 0.0f)) {
    return Status::InvalidArgument("qsa_block_pool: theta must be finite and > 0");
  }
  if (!(std::isfinite(a.eps) && a.eps >= 0.0f)) {
    return Status::InvalidArgument("qsa_block_pool: eps must be finite and >= 0");
  }
  const uint64_t end_block = uint64_t{a.start} + a.n;  // no overflow: both < 2^32
  uint64_t end_token = 0;
  if (MulOverflows(end_block, a.ratio, &end_token) || end_token > a.ingested) {
    return Status::OutOfRange("qsa_block_pool: blocks [" + Num(a.start) + ", " + Num(end_block) +
                              ") at ratio " + Num(a.ratio) + " need more than the " +
                              Num(a.ingested) + " ingested tokens");
  }
  QsaBlockPoolExtents e;
  const uint64_t row = uint64_t{a.hd} * 2;
  if (MulOverflows(end_token, row, &e.raw_key_bytes) ||
      MulOverflows(end_block, row, &e.block_key_bytes)) {
    return Status::OutOfRange("qsa_block_pool: buffer extents overflow");
  }
  e.vector_bytes = row;
  return e;
}

}  // namespace auxstore::gpu
