// RadosPageStore: pages as immutable, content-addressed RADOS objects.
//
// A page's object is named by the XXH3-128 of its bytes (PageKey) and is
// written with one exclusive create + write_full: two writers of the same
// page, in any processes on any nodes, store it once, and no writer ever
// overwrites an object. Every read is checked byte for byte against the
// name's hash: damaged bytes are Corruption, never returned.
#pragma once

#include <cstddef>
#include <span>
#include <vector>

#include "auxstore/blob_codecs.h"
#include "auxstore/status.h"
#include "store/rados/object_names.h"
#include "store/rados/rados_connection.h"

namespace auxstore::rados {

struct PagePutResult {
  std::vector<PageKey> keys;  // keys[i] names pages[i]
  size_t stored = 0;          // objects this call created
  size_t already_stored = 0;  // pages some writer had stored before (EEXIST)
};

class RadosPageStore {
 public:
  // `max_in_flight`: aio operations outstanding at once (the README measured
  // 16-32 per client as good).
  explicit RadosPageStore(RadosConnection& conn, size_t max_in_flight = 32)
      : conn_(conn), max_in_flight_(max_in_flight) {}

  // Stores every page; returns once RADOS acknowledged each (size 3,
  // min_size 2: durable on at least two OSDs). On a failure, the first
  // error (naming the page): pages stored before it stay, unnamed by any
  // manifest, and compact reclaims them after its grace period. `keys`:
  // the pages' keys when the caller has them already (keys[i] of pages[i]),
  // else empty, and each page is hashed as it is sent.
  Result<PagePutResult> PutPages(std::span<const ByteSpan> pages,
                                 std::span<const PageKey> keys = {});

  // Reads many pages at once. Result i: the bytes of keys[i], whose XXH3-128
  // was checked to equal the key; NotFound when no such object; Corruption
  // when the bytes differ from what the name says; Unavailable when the
  // cluster does not answer within the op timeout.
  std::vector<Result<std::vector<uint8_t>>> ReadPages(std::span<const PageKey> keys);

 private:
  RadosConnection& conn_;
  size_t max_in_flight_;
};

}  // namespace auxstore::rados
