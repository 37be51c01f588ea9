// Row ranges of a layer (Store::ReadLayerRows, issue 24): the rows an engine
// lacks, read through the one layer reader (every record and the layer
// digest verified) and copied once into the caller's buffer.
#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "auxstore/layer_reader.h"
#include "auxstore/store.h"
#include "format/layer_layout.h"

namespace auxstore {

namespace {

// Where array a's wanted rows are in the blob, and where they go in dst.
struct RowSpan {
  uint64_t blob_begin = 0, blob_end = 0, dst_offset = 0;
};

std::vector<RowSpan> WantedSpans(const LayerEntry& e, uint64_t first, uint64_t last) {
  std::vector<RowSpan> out;
  uint64_t at = 0;
  for (size_t a = 0; a < e.row_bytes.size(); ++a) {
    const uint64_t base = ArrayOffset(e, a);
    out.push_back({base + first * e.row_bytes[a], base + last * e.row_bytes[a], at});
    at += (last - first) * e.row_bytes[a];
  }
  return out;
}

// Copies the part of [piece_begin, piece_begin + bytes.size()) each span wants.
void CopyWanted(const std::vector<RowSpan>& spans, uint64_t piece_begin, ByteSpan bytes,
                std::span<uint8_t> dst) {
  const uint64_t piece_end = piece_begin + bytes.size();
  for (const RowSpan& s : spans) {
    const uint64_t b = std::max(s.blob_begin, piece_begin), e = std::min(s.blob_end, piece_end);
    if (b >= e) continue;
    std::memcpy(dst.data() + s.dst_offset + (b - s.blob_begin), bytes.data() + (b - piece_begin),
                e - b);
  }
}

}  // namespace

Result<Store::LayerRows> Store::ReadLayerRows(NamespaceId ns, const Prefix& prefix, uint32_t layer,
                                              uint64_t first_row, uint64_t last_row,
                                              std::span<uint8_t> dst) {
  AUXSTORE_ASSIGN_OR_RETURN(Manifest m, GetManifest(ns, prefix));
  const LayerEntry* e = m.FindLayer(layer);
  if (e == nullptr) {
    return Status::NotFound("the snapshot has no layer " + std::to_string(layer));
  }
  if (e->kind == Kind::kOpaque || e->row_bytes.empty()) {
    return Status::InvalidArgument("layer " + std::to_string(layer) +
                                   " is opaque: it has no rows (read it whole)");
  }
  if (first_row > last_row || last_row > e->rows) {
    return Status::OutOfRange("rows [" + std::to_string(first_row) + ", " +
                              std::to_string(last_row) + ") of layer " + std::to_string(layer) +
                              ", which has " + std::to_string(e->rows) + " rows");
  }
  uint64_t row_bytes = 0;
  for (uint32_t b : e->row_bytes) row_bytes += b;
  const LayerRows out{(last_row - first_row) * row_bytes, e->rows};
  if (dst.size() < out.bytes) {
    return Status::OutOfRange("rows [" + std::to_string(first_row) + ", " +
                              std::to_string(last_row) + ") of layer " + std::to_string(layer) +
                              " are " + std::to_string(out.bytes) +
                              " bytes; the destination holds " + std::to_string(dst.size()));
  }
  const std::vector<RowSpan> spans = WantedSpans(*e, first_row, last_row);
  AUXSTORE_ASSIGN_OR_RETURN(std::unique_ptr<LayerReader> reader, OpenLayer(ns, prefix, m, layer));
  // To the last piece: the layer digest is checked before it is yielded.
  while (!reader->done()) {
    AUXSTORE_ASSIGN_OR_RETURN(LayerReader::View v, reader->Read());
    CopyWanted(spans, v.piece.blob_offset, v.bytes, dst);
  }
  return out;
}

}  // namespace auxstore
