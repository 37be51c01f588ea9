// Restores a snapshot through the GPU restore pipeline (GpuPipeline on the
// host backend) into fresh sequence states, snapshots the states back and
// compares every byte with what was written: the restore path, not only
// Store::GetLayer, must return acknowledged snapshots bit-exact.
#pragma once

#include "auxstore/gpu_backend.h"
#include "auxstore/gpu_pipeline.h"
#include "auxstore/store.h"
#include "tests/reliability/snapshot_spec.h"

namespace auxstore::reliability {

// OK when every layer restored and read back equal to `want`'s bytes;
// otherwise the restore's error, or Corruption naming the layer that differs.
Status RestoreAndCompare(Store& store, GpuBackend& gpu, NamespaceId ns, const SnapshotSpec& want);

}  // namespace auxstore::reliability
