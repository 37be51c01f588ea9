#include "format/namespace_spec.h"

#include <bit>
#include <cmath>

#include "format/byte_order.h"

namespace auxstore {
namespace internal {

namespace {

// v1: model_id, QSA geometry, DSA geometry. v2 appends the identity fields
// (weight revision, tensor-parallel shard, opaque layer declarations). A
// spec with none of them set is written as v1, byte for byte as before.
constexpr uint32_t kVersion1 = 1;
constexpr uint32_t kVersion2 = 2;  // identity fields
constexpr uint32_t kVersion3 = 3;  // identity fields and page_tokens

// Reads little-endian fields off a span, failing (not reading) past its end.
class Reader {
 public:
  explicit Reader(ByteSpan p) : p_(p) {}
  bool U32(uint32_t* v) {
    if (p_.size() - at_ < 4) return false;
    *v = GetLE32(p_.data() + at_);
    at_ += 4;
    return true;
  }
  bool U64(uint64_t* v) {
    if (p_.size() - at_ < 8) return false;
    *v = GetLE64(p_.data() + at_);
    at_ += 8;
    return true;
  }
  bool Str(std::string* s, size_t max) {
    uint32_t n = 0;
    if (!U32(&n) || n > max || p_.size() - at_ < n) return false;
    s->assign(reinterpret_cast<const char*>(p_.data() + at_), n);
    at_ += n;
    return true;
  }
  bool done() const { return at_ == p_.size(); }

 private:
  ByteSpan p_;
  size_t at_ = 0;
};

}  // namespace

bool HasIdentityFields(const NamespaceSpec& spec) {
  return !spec.weight_revision.empty() || spec.tp_rank != 0 || spec.tp_world_size != 1 ||
         !spec.opaque_layers.empty() || spec.page_tokens != 0;
}

void AppendIdentityFields(std::string* s, const NamespaceSpec& spec) {
  AppendLE32(s, static_cast<uint32_t>(spec.weight_revision.size()));
  *s += spec.weight_revision;
  AppendLE32(s, spec.tp_rank);
  AppendLE32(s, spec.tp_world_size);
  AppendLE32(s, static_cast<uint32_t>(spec.opaque_layers.size()));
  for (const OpaqueLayerSpec& o : spec.opaque_layers) {
    AppendLE32(s, o.layer);
    AppendLE32(s, static_cast<uint32_t>(o.dtype));
    AppendLE32(s, static_cast<uint32_t>(o.shape.size()));
    for (uint64_t d : o.shape) AppendLE64(s, d);
  }
  // Only when set: namespaces without pages keep the ids they had before
  // page_tokens existed.
  if (spec.page_tokens != 0) AppendLE32(s, spec.page_tokens);
}

std::string EncodeNamespaceSpec(const NamespaceSpec& spec) {
  const bool v2 = HasIdentityFields(spec);
  std::string s;
  AppendLE32(&s, spec.page_tokens != 0 ? kVersion3 : v2 ? kVersion2 : kVersion1);
  AppendLE32(&s, static_cast<uint32_t>(spec.model_id.size()));
  s += spec.model_id;
  internal::AppendQsaGeometry(&s, spec.qsa);
  AppendLE32(&s, spec.dsa.index_head_dim);
  AppendLE32(&s, spec.dsa.capacity);
  if (v2) AppendIdentityFields(&s, spec);
  return s;
}

Result<NamespaceSpec> DecodeNamespaceSpec(ByteSpan p) {
  auto bad = [] { return Status::Corruption("namespace record is malformed"); };
  Reader r(p);
  uint32_t version = 0, u = 0;
  NamespaceSpec s;
  if (!r.U32(&version) || version < kVersion1 || version > kVersion3) return bad();
  if (!r.Str(&s.model_id, kMaxModelIdBytes)) return bad();
  uint32_t theta = 0, eps = 0;
  if (!r.U32(&s.qsa.hd) || !r.U32(&s.qsa.max_tokens) || !r.U32(&s.qsa.ratio) ||
      !r.U32(&s.qsa.rot) || !r.U32(&theta) || !r.U32(&eps) || !r.U32(&s.dsa.index_head_dim) ||
      !r.U32(&s.dsa.capacity)) {
    return bad();
  }
  s.qsa.theta = std::bit_cast<float>(theta);
  s.qsa.eps = std::bit_cast<float>(eps);
  if (version >= kVersion2) {
    uint32_t n = 0;
    if (!r.Str(&s.weight_revision, kMaxModelIdBytes) || !r.U32(&s.tp_rank) ||
        !r.U32(&s.tp_world_size) || !r.U32(&n) || n > kMaxOpaqueLayers) {
      return bad();
    }
    for (uint32_t i = 0; i < n; ++i) {
      OpaqueLayerSpec o;
      uint32_t dims = 0;
      if (!r.U32(&o.layer) || !r.U32(&u) || !r.U32(&dims) || dims > kMaxOpaqueDims) return bad();
      o.dtype = static_cast<DType>(u);
      o.shape.resize(dims);
      for (uint64_t& d : o.shape) {
        if (!r.U64(&d)) return bad();
      }
      s.opaque_layers.push_back(std::move(o));
    }
    if (version == kVersion3 && (!r.U32(&s.page_tokens) || s.page_tokens == 0)) return bad();
  }
  if (!r.done()) return bad();
  return s;
}

}  // namespace internal

using internal::kMaxOpaqueDims;
using internal::kMaxOpaqueLayers;

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
  if (spec.weight_revision.size() > internal::kMaxModelIdBytes) {
    return Status::InvalidArgument("namespace weight_revision is longer than 4096 bytes");
  }
  if (spec.tp_world_size == 0 || spec.tp_rank >= spec.tp_world_size) {
    return Status::InvalidArgument("tensor-parallel rank " + std::to_string(spec.tp_rank) +
                                   " must be below the world size " +
                                   std::to_string(spec.tp_world_size) + " (and that above 0)");
  }
  if (spec.page_tokens > (1u << 24)) {
    return Status::InvalidArgument("page_tokens " + std::to_string(spec.page_tokens) +
                                   " is over 2^24");
  }
  if (spec.opaque_layers.size() > kMaxOpaqueLayers) {
    return Status::InvalidArgument("more than 65536 opaque layer declarations");
  }
  for (size_t i = 0; i < spec.opaque_layers.size(); ++i) {
    const OpaqueLayerSpec& o = spec.opaque_layers[i];
    const std::string at = "opaque layer " + std::to_string(o.layer);
    if (i > 0 && o.layer <= spec.opaque_layers[i - 1].layer) {
      return Status::InvalidArgument(at +
                                     ": opaque layer declarations must be in ascending, "
                                     "unique layer order");
    }
    if (DTypeBytes(o.dtype) == 0) {
      return Status::InvalidArgument(at + ": unknown dtype " +
                                     std::to_string(static_cast<uint32_t>(o.dtype)));
    }
    if (o.shape.empty() || o.shape.size() > kMaxOpaqueDims) {
      return Status::InvalidArgument(at + ": shape needs 1 to 8 dimensions");
    }
    for (uint64_t dim : o.shape) {
      if (dim == 0) return Status::InvalidArgument(at + ": a dimension is 0");
    }
    if (OpaqueLayerBytes(o) == 0) {
      return Status::InvalidArgument(at + ": shape * dtype overflows 64 bits");
    }
  }
  return Status::Ok();
}

std::string_view DTypeName(DType dtype) {
  switch (dtype) {
    case DType::kU8:
      return "u8";
    case DType::kI8:
      return "i8";
    case DType::kBf16:
      return "bf16";
    case DType::kF16:
      return "f16";
    case DType::kF32:
      return "f32";
    case DType::kI32:
      return "i32";
    case DType::kF64:
      return "f64";
    case DType::kI64:
      return "i64";
  }
  return "unknown";
}

size_t DTypeBytes(DType dtype) {
  switch (dtype) {
    case DType::kU8:
    case DType::kI8:
      return 1;
    case DType::kBf16:
    case DType::kF16:
      return 2;
    case DType::kF32:
    case DType::kI32:
      return 4;
    case DType::kF64:
    case DType::kI64:
      return 8;
  }
  return 0;
}

uint64_t OpaqueLayerBytes(const OpaqueLayerSpec& spec) {
  uint64_t n = DTypeBytes(spec.dtype);
  for (uint64_t dim : spec.shape) {
    if (internal::MulOverflows(n, dim, &n)) return 0;
  }
  return n;
}

}  // namespace auxstore
