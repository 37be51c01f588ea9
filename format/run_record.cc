#include "format/run_record.h"

#include <xxhash.h>

#include "format/byte_order.h"
#include "format/byte_reader.h"

namespace auxstore {

using internal::AppendLE32;
using internal::AppendLE64;
using internal::GetLE32;
using internal::GetLE64;

namespace {

constexpr uint32_t kRunVersion = 1;

using Reader = internal::ByteReader;

Status Truncated() { return Status::Corruption("run record truncated"); }

}  // namespace

uint64_t RunRecord::stored_bytes() const {
  uint64_t n = 0;
  for (const RunLayer& l : layers) {
    for (const RunArray& a : l.arrays)
      n += uint64_t{l.pages} * page_tokens * a.row_bytes + a.tail_bytes;
  }
  return n;
}

std::string EncodeRunRecord(const RunRecord& r) {
  std::string s;
  AppendLE32(&s, kRunVersion);
  s.append(r.prefix.bytes.begin(), r.prefix.bytes.end());
  AppendLE32(&s, r.page_tokens);
  AppendLE32(&s, r.chunk_bytes);
  AppendLE32(&s, r.chain_first_page);
  AppendLE32(&s, static_cast<uint32_t>(r.chain.size()));
  for (const Prefix& p : r.chain) s.append(p.bytes.begin(), p.bytes.end());
  AppendLE32(&s, static_cast<uint32_t>(r.layers.size()));
  for (const RunLayer& l : r.layers) {
    AppendLE32(&s, l.layer);
    s.push_back(static_cast<char>(l.kind));
    AppendLE32(&s, l.first_page);
    AppendLE32(&s, l.pages);
    s.push_back(static_cast<char>(l.arrays.size()));
    for (const RunArray& a : l.arrays) {
      AppendLE32(&s, a.row_bytes);
      AppendLE64(&s, a.tail_bytes);
      AppendLE64(&s, a.tail_xxh3);
      for (uint64_t h : a.page_xxh3) AppendLE64(&s, h);
    }
  }
  return s;
}

Result<RunRecord> DecodeRunRecord(ByteSpan payload) {
  Reader rd(payload);
  RunRecord r;
  uint32_t version = 0, chain = 0, layers = 0;
  if (!rd.U32(&version)) return Truncated();
  if (version != kRunVersion) {
    return Status::Corruption("run record has unknown version " + std::to_string(version));
  }
  if (!rd.Bytes(r.prefix.bytes.data(), 16) || !rd.U32(&r.page_tokens) || !rd.U32(&r.chunk_bytes) ||
      !rd.U32(&r.chain_first_page) || !rd.U32(&chain)) {
    return Truncated();
  }
  if (r.chunk_bytes == 0) return Status::Corruption("run record has a chunk size of 0");
  if (chain > rd.remaining() / 16) return Truncated();
  if (uint64_t{r.chain_first_page} + chain > UINT32_MAX) {
    return Status::Corruption("run record's pages pass 2^32");
  }
  r.chain.resize(chain);
  for (Prefix& p : r.chain) (void)rd.Bytes(p.bytes.data(), 16);
  if (!rd.U32(&layers)) return Truncated();
  if (layers > rd.remaining() / 14) return Truncated();
  r.layers.resize(layers);
  for (uint32_t i = 0; i < layers; ++i) {
    RunLayer& l = r.layers[i];
    uint8_t kind = 0, arrays = 0;
    if (!rd.U32(&l.layer) || !rd.U8(&kind) || !rd.U32(&l.first_page) || !rd.U32(&l.pages) ||
        !rd.U8(&arrays)) {
      return Truncated();
    }
    if (!IsKnownKind(kind)) return Status::Corruption("run record layer has an unknown kind");
    l.kind = static_cast<Kind>(kind);
    if (i > 0 && l.layer <= r.layers[i - 1].layer) {
      return Status::Corruption("run record layers out of order");
    }
    if (uint64_t{l.first_page} + l.pages > UINT32_MAX) {
      return Status::Corruption("run record's pages pass 2^32");
    }
    if (arrays > 4) return Status::Corruption("run record layer has more than 4 arrays");
    l.arrays.resize(arrays);
    for (RunArray& a : l.arrays) {
      if (!rd.U32(&a.row_bytes) || !rd.U64(&a.tail_bytes) || !rd.U64(&a.tail_xxh3)) {
        return Truncated();
      }
      if (l.pages > rd.remaining() / 8) return Truncated();
      a.page_xxh3.resize(l.pages);
      for (uint64_t& h : a.page_xxh3) (void)rd.U64(&h);
    }
  }
  if (rd.remaining() != 0) return Status::Corruption("run record has trailing bytes");
  return r;
}

}  // namespace auxstore
