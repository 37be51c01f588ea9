// How a layer blob is laid out in rows and pages, and which stored bytes
// make it up (docs/format.md, "Pages").
//
// Blob = header | array 0 | array 1 | ...; array a holds `rows` rows of
// row_bytes[a] bytes. Page p of array a = rows [p * P, (p + 1) * P) (P =
// the manifest's page_tokens). The put that stores bytes for a layer keeps
// one stream per (layer, array): its own pages [own_first, full_pages) and
// then the tail rows [full_pages * P, rows), cut in chunks of its
// chunk_bytes. A run of pages stored by another put is read from that put's
// stream: page p lives at (p - owner_first_page) * P * row_bytes[a].
#pragma once

#include <cstdint>
#include <vector>

#include "auxstore/geometry.h"
#include "auxstore/manifest_types.h"
#include "auxstore/status.h"

namespace auxstore {

// Header bytes a blob of `kind` starts with (QSA, DSA: 16; opaque: 0).
size_t HeaderBytes(Kind kind);

// A blob's shape: its header, rows and the row size of each array.
struct LayerShape {
  std::vector<uint8_t> header;
  uint64_t rows = 0;
  std::vector<uint32_t> row_bytes;
};
// Where array `a` starts in a blob of this shape.
uint64_t ArrayOffset(const LayerShape& s, size_t a);
// The shape of a blob already checked against its namespace (CheckLayerBlob).
Result<LayerShape> ShapeOf(Kind kind, ByteSpan blob, const NamespaceSpec& spec);

// The structural checks of a decoded layer entry (DecodeManifest runs them).
Status CheckLayerLayout(const Manifest& m, const LayerEntry& l);

// The first page of a layer the manifest's own put stored (full_pages when
// it stored none: its runs with owner == put_id come last).
uint32_t OwnFirstPage(const Manifest& m, const LayerEntry& l);
// Bytes of array `a` in the own put's stream: its pages, then the tail.
uint64_t OwnStreamBytes(const Manifest& m, const LayerEntry& l, size_t a);
// Bytes of array `a`'s tail rows.
uint64_t TailBytes(const Manifest& m, const LayerEntry& l, size_t a);
// Where array `a` starts in the blob.
uint64_t ArrayOffset(const LayerEntry& l, size_t a);

// Every put whose records the manifest reads: its own and the owners of
// its shared pages, ascending, each once.
std::vector<PutId> UsedPuts(const Manifest& m);
// Whether every record the manifest reads is its own put's (UsedPuts would
// be that put alone), without building the list.
bool OwnsEveryRecord(const Manifest& m);

}  // namespace auxstore
