#include "format/namespace_spec.h"

#include <bit>
#include <cmath>

#include "format/byte_order.h"

namespace auxstore {
namespace internal {

namespace {
constexpr uint32_t kVersion = 1;
}  // namespace

std::string EncodeNamespaceSpec(const NamespaceSpec& spec) {
  std::string s;
  AppendLE32(&s, kVersion);
  AppendLE32(&s, static_cast<uint32_t>(spec.model_id.size()));
  s += spec.model_id;
  internal::AppendQsaGeometry(&s, spec.qsa);
  AppendLE32(&s, spec.dsa.index_head_dim);
  AppendLE32(&s, spec.dsa.capacity);
  return s;
}

Result<NamespaceSpec> DecodeNamespaceSpec(ByteSpan p) {
  auto bad = [] { return Status::Corruption("namespace record is malformed"); };
  if (p.size() < 8 || GetLE32(p.data()) != kVersion) return bad();
  const uint32_t id_len = GetLE32(p.data() + 4);
  if (id_len > kMaxModelIdBytes || p.size() != 8 + size_t{id_len} + 8 * 4) return bad();
  NamespaceSpec s;
  s.model_id.assign(reinterpret_cast<const char*>(p.data() + 8), id_len);
  const uint8_t* q = p.data() + 8 + id_len;
  s.qsa.hd = GetLE32(q);
  s.qsa.max_tokens = GetLE32(q + 4);
  s.qsa.ratio = GetLE32(q + 8);
  s.qsa.rot = GetLE32(q + 12);
  s.qsa.theta = std::bit_cast<float>(GetLE32(q + 16));
  s.qsa.eps = std::bit_cast<float>(GetLE32(q + 20));
  s.dsa.index_head_dim = GetLE32(q + 24);
  s.dsa.capacity = GetLE32(q + 28);
  return s;
}

}  // namespace internal

Status ValidateNamespaceSpec(const NamespaceSpec& spec) {
  if (spec.model_id.empty()) return Status::InvalidArgument("namespace model_id is empty");
  if (spec.model_id.size() > internal::kMaxModelIdBytes) {
    return Status::InvalidArgument("namespace model_id is longer than 4096 bytes");
  }
  const QsaGeometry& q = spec.qsa;
  if (q.used()) {
    if (q.max_tokens == 0) return Status::InvalidArgument("QSA max_tokens is 0");
    if (q.ratio == 0) return Status::InvalidArgument("QSA ratio is 0");
    if (q.rot % 2 != 0 || q.rot > q.hd) {
      return Status::InvalidArgument("QSA rot " + std::to_string(q.rot) +
                                     " must be even and <= hd " + std::to_string(q.hd));
    }
    if (!(q.theta > 0.0f) || !std::isfinite(q.theta)) {
      return Status::InvalidArgument("QSA theta must be a positive finite number");
    }
    if (!(q.eps >= 0.0f) || !std::isfinite(q.eps)) {
      return Status::InvalidArgument("QSA eps must be a non-negative finite number");
    }
  } else if (q.max_tokens || q.ratio || q.rot) {
    return Status::InvalidArgument("QSA geometry has hd 0 (unused) but other fields set");
  }
  const DsaGeometry& d = spec.dsa;
  if (d.used() && d.capacity == 0) return Status::InvalidArgument("DSA capacity is 0");
  if (!d.used() && d.capacity) {
    return Status::InvalidArgument("DSA geometry has index_head_dim 0 (unused) but a capacity");
  }
  return Status::Ok();
}

}  // namespace auxstore
