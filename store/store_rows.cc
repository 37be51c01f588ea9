// Row ranges of a layer (Store::ReadLayerRows, issue 24): the rows an engine
// lacks, read through the one layer reader (every record and the layer
// digest verified) and copied once into the caller's buffer. DbStore reads
// a paged layer's rows from the records holding them only
// (store_rows_paged.cc).
#include "store/store_rows.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "auxstore/layer_reader.h"
#include "format/layer_layout.h"

namespace auxstore {

namespace store_internal {

Result<RowsPlan> PlanRows(const Manifest& m, uint32_t layer, uint64_t first_row, uint64_t last_row,
                          uint64_t dst_bytes) {
  RowsPlan plan;
  plan.entry = m.FindLayer(layer);
  const LayerEntry* e = plan.entry;
  if (e == nullptr) {
    return Status::NotFound("the snapshot has no layer " + std::to_string(layer));
  }
  if (e->kind == Kind::kOpaque || e->row_bytes.empty()) {
    return Status::InvalidArgument("layer " + std::to_string(layer) +
                                   " is opaque: it has no rows (read it whole)");
  }
  const std::string rows = "rows [" + std::to_string(first_row) + ", " + std::to_string(last_row) +
                           ") of layer " + std::to_string(layer);
  if (first_row > last_row || last_row > e->rows) {
    return Status::OutOfRange(rows + ", which has " + std::to_string(e->rows) + " rows");
  }
  uint64_t row_bytes = 0;
  for (uint32_t b : e->row_bytes) row_bytes += b;
  plan.out = {(last_row - first_row) * row_bytes, e->rows};
  if (dst_bytes < plan.out.bytes) {
    return Status::OutOfRange(rows + " are " + std::to_string(plan.out.bytes) +
                              " bytes; the destination holds " + std::to_string(dst_bytes));
  }
  uint64_t at = 0;
  for (size_t a = 0; a < e->row_bytes.size(); ++a) {
    const uint64_t base = ArrayOffset(*e, a);
    plan.spans.push_back(
        {base + first_row * e->row_bytes[a], base + last_row * e->row_bytes[a], at});
    at += (last_row - first_row) * e->row_bytes[a];
  }
  return plan;
}

void CopyWanted(std::span<const RowSpan> spans, uint64_t piece_begin, ByteSpan bytes,
                std::span<uint8_t> dst) {
  const uint64_t piece_end = piece_begin + bytes.size();
  for (const RowSpan& s : spans) {
    const uint64_t b = std::max(s.blob_begin, piece_begin), e = std::min(s.blob_end, piece_end);
    if (b >= e) continue;
    std::memcpy(dst.data() + s.dst_offset + (b - s.blob_begin), bytes.data() + (b - piece_begin),
                e - b);
  }
}

bool Wanted(std::span<const RowSpan> spans, uint64_t piece_begin, uint64_t piece_bytes) {
  return std::any_of(spans.begin(), spans.end(), [&](const RowSpan& s) {
    return s.blob_begin < s.blob_end && s.blob_begin < piece_begin + piece_bytes &&
           piece_begin < s.blob_end;
  });
}

}  // namespace store_internal

Result<Store::LayerRows> Store::ReadLayerRows(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                              uint64_t first_row, uint64_t last_row,
                                              std::span<uint8_t> dst) {
  AUXSTORE_ASSIGN_OR_RETURN(Manifest m, GetManifest(ns, prefix));
  AUXSTORE_ASSIGN_OR_RETURN(store_internal::RowsPlan plan,
                            store_internal::PlanRows(m, layer, first_row, last_row, dst.size()));
  AUXSTORE_ASSIGN_OR_RETURN(std::unique_ptr<LayerReader> reader, OpenLayer(ns, prefix, m, layer));
  // To the last piece: the layer digest is checked before it is yielded.
  while (!reader->done()) {
    AUXSTORE_ASSIGN_OR_RETURN(LayerReader::View v, reader->Read());
    store_internal::CopyWanted(plan.spans, v.piece.blob_offset, v.bytes, dst);
  }
  return plan.out;
}

}  // namespace auxstore
