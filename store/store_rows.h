// Row ranges of a layer (Store::ReadLayerRows, issue 24): the checks and the
// plan shared by the whole-layer read (store_rows.cc) and the paged one that
// reads only the records holding the rows (store_rows_paged.cc).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "auxstore/store.h"

namespace auxstore::store_internal {

// Where array a's wanted rows are in the blob, and where they go in dst.
struct RowSpan {
  uint64_t blob_begin = 0, blob_end = 0, dst_offset = 0;
};

struct RowsPlan {
  const LayerEntry* entry = nullptr;  // in the manifest planned from
  Store::LayerRows out;
  std::vector<RowSpan> spans;  // one per array, in blob order
};

// Checks rows [first_row, last_row) of `layer` of `m` against a destination
// of `dst_bytes`: NotFound (no layer), InvalidArgument (opaque), OutOfRange
// (a bad range, too small a destination); nothing is read.
Result<RowsPlan> PlanRows(const Manifest& m, uint32_t layer, uint64_t first_row, uint64_t last_row,
                          uint64_t dst_bytes);

// Copies the part of blob bytes [piece_begin, piece_begin + bytes.size())
// each span wants into dst.
void CopyWanted(std::span<const RowSpan> spans, uint64_t piece_begin, ByteSpan bytes,
                std::span<uint8_t> dst);

// True when [piece_begin, piece_begin + piece_bytes) holds a wanted byte.
bool Wanted(std::span<const RowSpan> spans, uint64_t piece_begin, uint64_t piece_bytes);

}  // namespace auxstore::store_internal
