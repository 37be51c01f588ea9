// LayerReader: a cursor over one layer of a snapshot that yields the
// layer's verified bytes piece by piece, in blob order. It is the only code
// that verifies a layer; Store::ReadLayer, GetLayer, ReadLayerInto, Verify
// and the GPU pipeline's restore all read through it.
//
// The contract, kept by the reader itself (a caller follows no rule):
//  - The header (LayerEntry::header, blob bytes [0, header.size()), held
//    by the manifest) is fed to the layer digest when the reader opens; a
//    layer that is only a header has its digest checked there.
//  - Every piece's record is checked as it is read (its envelope under its
//    own key, the record kind of the layer's kind, the piece's bytes), in
//    the same pass as the copy into the caller's buffer and the layer
//    digest: one pass over the bytes, one copy, from RocksDB's block into
//    the destination. A reader opened with PieceChecks::kLayerDigest skips
//    the records' own checksums on ReadInto (below).
//  - The layer digest is compared with the manifest's before the LAST piece
//    is returned: a caller never holds a complete layer that is not the one
//    the manifest names.
//  - On damage (a record missing, altered or of another kind, or a digest
//    mismatch) the read returns Corruption and the snapshot is quarantined
//    (with every other snapshot using a damaged record), but only if the
//    stored manifest is still the one the reader was opened with: a
//    snapshot erased or replaced while it was read returns NotFound (a race
//    with a writer, not damage) and nothing is quarantined.
//  - After an error the reader is spent: every later read returns it again.
//
// A reader is used by one thread at a time and must not outlive its Store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "auxstore/blob_codecs.h"
#include "auxstore/manifest_types.h"
#include "auxstore/status.h"

namespace auxstore {

// How a reader checks the pieces it copies (Store::OpenLayer).
enum class PieceChecks : uint8_t {
  // Each piece's record in full, its own checksum included, before the
  // piece is yielded: two hash passes over every byte (the record's
  // checksum and the layer digest).
  kEachRecord = 0,
  // ReadInto checks each record's envelope, key, kind and range but its
  // bytes only through the layer digest: one hash pass. The digest is still
  // compared before the last piece is yielded; on a mismatch every record is
  // decoded again with its own checksum, so a damaged one is named and
  // quarantined as kEachRecord would have. Pieces before the last may hold
  // damaged bytes, so this is for callers that use nothing until the last
  // piece returns OK (the restore pipeline commits a restore only then).
  // Pieces stored in table files are then read from the file straight
  // into the destination, without RocksDB's block read (one
  // copy, the kernel's; the index and properties blocks checksummed, the
  // record's key, type and envelope header checked field by field, its
  // bytes by the layer digest), and the digest mismatch decodes them again
  // through RocksDB: when RocksDB's bytes give the right digest, the read
  // fails with IOError and nothing is quarantined.
  // Read()'s views are always checked in full.
  kLayerDigest = 1,
};

class LayerReader {
 public:
  virtual ~LayerReader() = default;

  // The layer's entry in the manifest the reader was opened with.
  virtual const LayerEntry& entry() const = 0;
  // Every piece after the header, in the order the reads yield them
  // (PlanPieces of the manifest and entry).
  virtual std::span<const LayerPiece> pieces() const = 0;
  // The index into pieces() of the piece the next read yields; after an
  // error, of the piece that failed (it was not yielded).
  virtual size_t next() const = 0;
  bool done() const { return next() == pieces().size(); }

  // Reads the next piece into dst[0, piece.bytes) and returns it; `dst` may
  // be larger. OutOfRange (nothing written, the cursor unmoved) when `dst`
  // is smaller than the piece or every piece was read. On Corruption `dst`
  // holds partial bytes that must not be used.
  virtual Result<LayerPiece> ReadInto(std::span<uint8_t> dst) = 0;

  // The next piece without a copy: its verified bytes, a view into RocksDB's
  // block that stays valid until the next read or the reader's destruction.
  struct View {
    LayerPiece piece;
    ByteSpan bytes;
  };
  virtual Result<View> Read() = 0;

 protected:
  LayerReader() = default;
  LayerReader(const LayerReader&) = delete;
  LayerReader& operator=(const LayerReader&) = delete;
};

}  // namespace auxstore
