#include "auxstore/blob_codecs.h"

#include <cstring>
#include <string>

#include "format/byte_order.h"

namespace auxstore {

using internal::AddOverflows;
using internal::GetLE64;
using internal::MulOverflows;
using internal::PutLE64;

namespace {

std::string Num(uint64_t v) { return std::to_string(v); }

}  // namespace

std::string_view KindName(Kind kind) {
  switch (kind) {
    case Kind::kQsa:
      return "QSA";
    case Kind::kDsa:
      return "DSA";
    case Kind::kOpaque:
      return "opaque";
  }
  return "unknown";
}

bool IsKnownKind(uint8_t raw) { return raw >= 1 && raw <= 3; }

// ---- QSA ---------------------------------------------------------------------

Result<QsaHeader> CheckQsaBlob(ByteSpan head, uint64_t blob_size, const QsaGeometry& geo) {
  if (blob_size < kQsaHeaderBytes || head.size() < kQsaHeaderBytes) {
    return Status::Corruption("QSA aux blob truncated: " + Num(blob_size) +
                              " bytes, need at least 16 for the header");
  }
  QsaHeader h;
  h.ingested = GetLE64(head.data());
  h.pooled = GetLE64(head.data() + 8);
  uint64_t expected = 0;
  if (MulOverflows(h.ingested, uint64_t{geo.hd} * 2, &h.raw_key_bytes) ||
      AddOverflows(kQsaHeaderBytes, h.raw_key_bytes, &expected)) {
    return Status::Corruption("QSA aux blob size overflows: ingested " + Num(h.ingested) +
                              " tokens at hd " + Num(geo.hd) + " does not fit in 64 bits");
  }
  if (blob_size != expected) {
    return Status::Corruption("QSA aux blob size mismatch: " + Num(blob_size) + " bytes for " +
                              Num(h.ingested) + " tokens at hd " + Num(geo.hd) + ", expected " +
                              Num(expected));
  }
  if (h.ingested > geo.max_tokens) {
    return Status::OutOfRange("QSA aux blob exceeds the key cache: " + Num(h.ingested) +
                              " tokens ingested, max_tokens is " + Num(geo.max_tokens));
  }
  uint64_t pooled_tokens = 0;
  if (MulOverflows(h.pooled, geo.ratio, &pooled_tokens) || pooled_tokens > h.ingested) {
    return Status::Corruption("QSA aux blob pools more than it holds: " + Num(h.pooled) +
                              " blocks at ratio " + Num(geo.ratio) + " need more than the " +
                              Num(h.ingested) + " ingested tokens");
  }
  return h;
}

Result<QsaBlobView> DecodeQsaBlob(ByteSpan blob, const QsaGeometry& geo) {
  AUXSTORE_ASSIGN_OR_RETURN(QsaHeader h, CheckQsaBlob(blob, blob.size(), geo));
  return QsaBlobView{h, blob.subspan(kQsaHeaderBytes, h.raw_key_bytes)};
}

Result<std::vector<uint8_t>> EncodeQsaBlob(uint64_t ingested, uint64_t pooled, ByteSpan raw_keys,
                                           uint32_t hd) {
  uint64_t want = 0;
  if (MulOverflows(ingested, uint64_t{hd} * 2, &want) || raw_keys.size() != want) {
    return Status::InvalidArgument("QSA raw keys are " + Num(raw_keys.size()) + " bytes, " +
                                   Num(ingested) + " tokens at hd " + Num(hd) + " need " +
                                   Num(want));
  }
  std::vector<uint8_t> blob(kQsaHeaderBytes + raw_keys.size());
  PutLE64(blob.data(), ingested);
  PutLE64(blob.data() + 8, pooled);
  if (!raw_keys.empty()) std::memcpy(blob.data() + kQsaHeaderBytes, raw_keys.data(), want);
  return blob;
}

// ---- DSA ---------------------------------------------------------------------

Result<DsaLayout> DsaBlobLayout(uint64_t len, uint64_t d) {
  DsaLayout l;
  l.len = len;
  l.index_head_dim = d;
  uint64_t row = 0, body = 0;
  if (MulOverflows(d, 4, &row) || AddOverflows(row, 1, &row) || MulOverflows(len, row, &body) ||
      AddOverflows(body, kDsaHeaderBytes, &l.total_bytes)) {
    return Status::OutOfRange("DSA aux blob size overflows: " + Num(len) + " rows at head_dim " +
                              Num(d));
  }
  l.key_bytes = len * d * 2;  // < total_bytes, cannot overflow now
  l.k_normed_offset = kDsaHeaderBytes;
  l.gate_offset = kDsaHeaderBytes + l.key_bytes;
  l.valid_offset = kDsaHeaderBytes + 2 * l.key_bytes;
  return l;
}

Result<DsaLayout> CheckDsaBlob(ByteSpan head, uint64_t blob_size, const DsaGeometry& geo) {
  if (blob_size < kDsaHeaderBytes || head.size() < kDsaHeaderBytes) {
    return Status::Corruption("DSA aux blob truncated: " + Num(blob_size) +
                              " bytes, need at least 16 for the header");
  }
  const uint64_t len = GetLE64(head.data());
  const uint64_t d = GetLE64(head.data() + 8);
  if (d != geo.index_head_dim) {
    return Status::InvalidArgument("DSA aux blob index_head_dim " + Num(d) + " != this layer's " +
                                   Num(geo.index_head_dim) +
                                   " — the snapshot was taken under a different model geometry");
  }
  auto layout = DsaBlobLayout(len, d);
  if (!layout.ok() || layout->total_bytes != blob_size) {
    return Status::Corruption("DSA aux blob size mismatch: " + Num(blob_size) + " bytes for " +
                              Num(len) + " rows at head_dim " + Num(d) + ", expected " +
                              (layout.ok() ? Num(layout->total_bytes) : "more than 2^64"));
  }
  if (len > geo.capacity) {
    return Status::OutOfRange("DSA aux blob holds " + Num(len) +
                              " rows, more than this state's capacity of " + Num(geo.capacity));
  }
  return layout;
}

Result<DsaBlobView> DecodeDsaBlob(ByteSpan blob, const DsaGeometry& geo) {
  AUXSTORE_ASSIGN_OR_RETURN(DsaLayout l, CheckDsaBlob(blob, blob.size(), geo));
  return DsaBlobView{l, blob.subspan(l.k_normed_offset, l.key_bytes),
                     blob.subspan(l.gate_offset, l.key_bytes), blob.subspan(l.valid_offset, l.len)};
}

Result<std::vector<uint8_t>> EncodeDsaBlob(uint64_t len, uint32_t index_head_dim, ByteSpan k_normed,
                                           ByteSpan gate, ByteSpan valid) {
  AUXSTORE_ASSIGN_OR_RETURN(DsaLayout l, DsaBlobLayout(len, index_head_dim));
  if (k_normed.size() != l.key_bytes || gate.size() != l.key_bytes || valid.size() != len) {
    return Status::InvalidArgument(
        "DSA parts are " + Num(k_normed.size()) + "/" + Num(gate.size()) + "/" + Num(valid.size()) +
        " bytes, " + Num(len) + " rows at head_dim " + Num(index_head_dim) + " need " +
        Num(l.key_bytes) + "/" + Num(l.key_bytes) + "/" + Num(len));
  }
  std::vector<uint8_t> blob(l.total_bytes);
  PutLE64(blob.data(), len);
  PutLE64(blob.data() + 8, index_head_dim);
  if (len > 0) {
    std::memcpy(blob.data() + l.k_normed_offset, k_normed.data(), l.key_bytes);
    std::memcpy(blob.data() + l.gate_offset, gate.data(), l.key_bytes);
    std::memcpy(blob.data() + l.valid_offset, valid.data(), len);
  }
  return blob;
}

// ---- Any kind ------------------------------------------------------------------

size_t BlobHeadBytes(Kind kind) {
  switch (kind) {
    case Kind::kQsa:
      return kQsaHeaderBytes;
    case Kind::kDsa:
      return kDsaHeaderBytes;
    case Kind::kOpaque:
      return 0;
  }
  return 0;
}

Status CheckBlob(Kind kind, ByteSpan head, uint64_t blob_size, const NamespaceSpec& spec) {
  switch (kind) {
    case Kind::kQsa:
      if (!spec.qsa.used())
        return Status::InvalidArgument("QSA layer in a namespace registered without QSA geometry");
      return CheckQsaBlob(head, blob_size, spec.qsa).status();
    case Kind::kDsa:
      if (!spec.dsa.used())
        return Status::InvalidArgument("DSA layer in a namespace registered without DSA geometry");
      return CheckDsaBlob(head, blob_size, spec.dsa).status();
    case Kind::kOpaque:
      return Status::Ok();
  }
  return Status::InvalidArgument("unknown blob kind " +
                                 std::to_string(static_cast<unsigned>(kind)));
}

Status CheckLayerBlob(uint32_t layer, Kind kind, ByteSpan head, uint64_t blob_size,
                      const NamespaceSpec& spec) {
  AUXSTORE_RETURN_IF_ERROR(CheckBlob(kind, head, blob_size, spec));
  if (kind != Kind::kOpaque) return Status::Ok();
  const OpaqueLayerSpec* declared = spec.FindOpaque(layer);
  if (declared == nullptr) return Status::Ok();
  const uint64_t want = OpaqueLayerBytes(*declared);
  if (blob_size == want) return Status::Ok();
  std::string shape;
  for (uint64_t d : declared->shape) shape += (shape.empty() ? "" : "x") + std::to_string(d);
  return Status::InvalidArgument("opaque blob is " + std::to_string(blob_size) +
                                 " bytes; the namespace declares this layer " +
                                 std::string(DTypeName(declared->dtype)) + "[" + shape +
                                 "] = " + std::to_string(want) + " bytes");
}

}  // namespace auxstore
