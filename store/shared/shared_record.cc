#include "store/shared/shared_record.h"

#include <algorithm>
#include <cstring>

#include "format/byte_order.h"
#include "format/byte_reader.h"
#include "format/manifest.h"
#include "format/namespace_spec.h"

namespace auxstore::shared {
using namespace auxstore::internal;
namespace {

constexpr char kMagic[8] = {'A', 'X', 'S', 'H', 'A', 'R', 'E', '1'};

struct Writer {
  std::vector<uint8_t> out;
  void Raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  }
  void U32(uint32_t v) {
    uint8_t b[4];
    PutLE32(b, v);
    Raw(b, 4);
  }
  void U64(uint64_t v) {
    uint8_t b[8];
    PutLE64(b, v);
    Raw(b, 8);
  }
  void Sized(const std::string& s) {
    U32(static_cast<uint32_t>(s.size()));
    Raw(s.data(), s.size());
  }
};

bool ReadSized(ByteReader& r, std::vector<uint8_t>* out) {
  uint32_t n = 0;
  if (!r.U32(&n) || n > r.remaining()) return false;
  out->resize(n);
  return r.Bytes(out->data(), n);
}

}  // namespace

std::vector<rados::PageKey> SharedRecord::Pages() const {
  std::vector<rados::PageKey> keys;
  for (const auto& l : layers)
    for (const auto& s : l.segments) keys.push_back(s.key);
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return keys;
}

std::vector<uint8_t> SharedId(NamespaceId ns, const Prefix& prefix) {
  std::vector<uint8_t> id(8 + prefix.bytes.size());
  PutLE64(id.data(), ns);
  std::memcpy(id.data() + 8, prefix.bytes.data(), prefix.bytes.size());
  return id;
}

std::optional<std::pair<NamespaceId, Prefix>> ParseSharedObject(std::string_view object) {
  const std::string want = rados::ManifestObjectName(SharedId(0, Prefix{}));
  if (object.size() != want.size() || !object.starts_with(rados::kManifestPrefix)) {
    return std::nullopt;
  }
  std::string_view hex = object.substr(rados::kManifestPrefix.size());
  uint8_t id[24];
  for (size_t i = 0; i < sizeof id; ++i) {
    unsigned v = 0;
    for (char c : hex.substr(2 * i, 2)) {
      const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (d < 0) return std::nullopt;
      v = v * 16 + static_cast<unsigned>(d);
    }
    id[i] = static_cast<uint8_t>(v);
  }
  Prefix p;
  std::memcpy(p.bytes.data(), id + 8, p.bytes.size());
  return std::pair{GetLE64(id), p};
}

std::vector<uint8_t> EncodeSharedRecord(const SharedRecord& r) {
  Writer w;
  w.Raw(kMagic, sizeof(kMagic));
  w.U64(r.ns);
  w.Raw(r.prefix.bytes.data(), r.prefix.bytes.size());
  w.Sized(EncodeNamespaceSpec(r.spec));
  w.Sized(EncodeManifest(r.manifest));
  w.U32(r.block_size);
  w.U32(static_cast<uint32_t>(r.block_chain.size()));
  for (const auto& p : r.block_chain) w.Raw(p.bytes.data(), p.bytes.size());
  w.U32(static_cast<uint32_t>(r.layers.size()));
  for (const auto& l : r.layers) {
    w.U32(l.layer);
    w.U32(static_cast<uint32_t>(l.segments.size()));
    for (const auto& s : l.segments) {
      w.Raw(s.key.hash.data(), s.key.hash.size());
      w.U64(s.bytes);
    }
  }
  return std::move(w.out);
}

Result<SharedRecord> DecodeSharedRecord(ByteSpan bytes, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return Status::Corruption(what + ": the shared record " + why);
  };
  ByteReader r(bytes);
  uint8_t magic[8];
  if (!r.Bytes(magic, 8) || std::memcmp(magic, kMagic, 8) != 0) return bad("has no AXSHARE1 tag");
  SharedRecord rec;
  std::vector<uint8_t> spec, manifest;
  if (!r.U64(&rec.ns) || !r.Bytes(rec.prefix.bytes.data(), rec.prefix.bytes.size()) ||
      !ReadSized(r, &spec) || !ReadSized(r, &manifest)) {
    return bad("is truncated");
  }
  auto s = DecodeNamespaceSpec(spec);
  if (!s.ok()) return bad("has a bad namespace spec: " + s.status().ToString());
  rec.spec = std::move(s).value();
  auto m = DecodeManifest(manifest);
  if (!m.ok()) return bad("has a bad manifest: " + m.status().ToString());
  rec.manifest = std::move(m).value();
  uint32_t chain = 0, layers = 0;
  if (!r.U32(&rec.block_size) || !r.U32(&chain) || chain > r.remaining() / 16) {
    return bad("is truncated in its block chain");
  }
  rec.block_chain.resize(chain);
  for (auto& p : rec.block_chain) r.Bytes(p.bytes.data(), p.bytes.size());
  if (!r.U32(&layers) || layers != rec.manifest.layers.size()) return bad("has a bad layer count");
  rec.layers.resize(layers);
  for (size_t i = 0; i < layers; ++i) {
    auto& l = rec.layers[i];
    uint32_t segments = 0;
    if (!r.U32(&l.layer) || !r.U32(&segments) || segments > r.remaining() / 24) {
      return bad("is truncated in layer " + std::to_string(i));
    }
    l.segments.resize(segments);
    uint64_t total = 0;
    for (auto& seg : l.segments) {
      r.Bytes(seg.key.hash.data(), seg.key.hash.size());
      r.U64(&seg.bytes);
      total += seg.bytes;
    }
    const auto& entry = rec.manifest.layers[i];
    if (l.layer != entry.layer || total != entry.bytes) {
      return bad("cuts layer " + std::to_string(l.layer) + " into " + std::to_string(total) +
                 " bytes, not its " + std::to_string(entry.bytes));
    }
  }
  if (r.remaining() != 0) return bad("has trailing bytes");
  return rec;
}

std::vector<Range> CutLayer(const Manifest& m, const LayerEntry& l) {
  std::vector<Range> out;
  auto add = [&](uint64_t offset, uint64_t bytes) {
    for (uint64_t done = 0; done < bytes;) {
      const uint64_t n = std::min(kMaxSegmentBytes, bytes - done);
      out.push_back({offset + done, n});
      done += n;
    }
  };
  uint64_t at = l.header.size();
  add(0, at);
  const uint64_t pages = l.full_pages();
  for (uint32_t row_bytes : l.row_bytes) {
    const uint64_t array_bytes = l.rows * row_bytes;
    const uint64_t page_bytes = uint64_t{m.page_tokens} * row_bytes;
    const uint64_t paged = page_bytes == 0 ? 0 : std::min(pages * page_bytes, array_bytes);
    for (uint64_t p = 0; p < paged; p += page_bytes) add(at + p, page_bytes);
    add(at + paged, array_bytes - paged);
    at += array_bytes;
  }
  if (at < l.bytes) add(at, l.bytes - at);  // a layout the rows do not describe: the rest
  return out;
}

}  // namespace auxstore::shared
