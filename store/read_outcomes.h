// What the reads into caller memory (ReadLayersInto, ReadSnapshotsInto)
// report per layer, shared by every store that implements them.
#pragma once

#include <cstddef>
#include <span>

#include "auxstore/store.h"

namespace auxstore {

// The layers from `from` on fail with `why` ("layer N not read"): the
// snapshot is gone or was quarantined, so none of them can be read any more.
void FailRest(std::span<Store::LayerInto> layers, size_t from, const Status& why);

// The first layer's error, in their order; OK when every layer was read.
Status FirstError(std::span<const Store::LayerInto> layers);

}  // namespace auxstore
