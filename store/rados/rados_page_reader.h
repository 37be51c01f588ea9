// ReadPagesInto: many pages read straight into the caller's buffers, each
// checked against its key on the way.
//
// RadosPageStore::ReadPages returns each page in a vector of its own: one
// allocation, a fresh (page-faulting) copy and a hash pass per page, which
// halves cold-read throughput on this project's VMs (bench/RESULTS.md,
// "Shared tier"). A restore already holds its staging buffers: this reads
// into them, hashing librados's receive buffers in place (streaming
// XXH3-128) and copying each page once, into its destination.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "auxstore/status.h"
#include "store/rados/object_names.h"
#include "store/rados/rados_connection.h"

namespace auxstore::rados {

// Reads page keys[i] into dst[i], whose size must be the page's. Result i:
// Ok (dst[i] holds exactly the bytes whose XXH3-128 is keys[i]); NotFound;
// Corruption when the object's bytes are not what its key says or not
// dst[i].size() bytes long (dst[i] then holds nothing to use); Unavailable
// when the cluster does not answer within the op timeout. `max_in_flight`
// aio reads at once. `on_read(i)`, when given, is called on the calling
// thread as soon as page i is read and checked (the other reads still in
// flight): where a caller checks what the pages make up, meanwhile.
std::vector<Status> ReadPagesInto(RadosConnection& conn, std::span<const PageKey> keys,
                                  std::span<const std::span<uint8_t>> dst,
                                  size_t max_in_flight = 32,
                                  const std::function<void(size_t)>& on_read = {});

}  // namespace auxstore::rados
