// The store-level half of auxstore_rados_bench: puts through a store on the
// shared tier and cold restores into an empty local directory.
#pragma once

#include <cstddef>
#include <string>

#include "auxstore/status.h"
#include "store/rados/rados_uri.h"

namespace auxstore::bench {

struct StoreFigures {
  double put_mib_s = 0;  // PutSnapshot (SharedWrite::kThrough), all snapshots
  // PutSnapshot (kThrough) with Options::shared_local_copies off: to the
  // pool alone, as many other snapshots.
  double uncopied_put_mib_s = 0;
  // One PutSnapshots of as many other snapshots (kThrough), with local
  // copies and without.
  double batch_put_mib_s = 0;
  double uncopied_batch_put_mib_s = 0;
  double restore_mib_s = 0;  // LongestPrefix on an empty local store: pool -> local
  // One CountLeadingStored of all of them on another empty store, then a
  // ReadLayersInto of each: pool -> the caller's memory, and until every
  // local copy is written too.
  double batch_restore_mib_s = 0;
  double batch_restore_settled_mib_s = 0;
  // LongestPrefix + ReadLayersInto of each on an empty store: pool -> the
  // caller's memory (the local copies written behind may still be queued),
  // and until every local copy is written too.
  double restore_into_mib_s = 0;
  double restore_into_settled_mib_s = 0;
  // This process's CPU (all threads: the store's and librados's) per MiB,
  // until every local copy is written: the batch, and a LongestPrefix and a
  // ReadLayersInto each.
  double batch_cpu_ms_per_mib = 0;
  double into_cpu_ms_per_mib = 0;
  // Options::shared_local_copies off, on empty stores: a LongestPrefix and
  // a ReadLayersInto each; a CountLeadingStored and one ReadSnapshotsInto of
  // all of them (each its own memory). Straight from the pool into memory.
  double uncopied_each_mib_s = 0;
  double uncopied_batch_mib_s = 0;
  // Local copies on, no lookup before (a process reading what another
  // looked up): one ReadSnapshotsInto of all of them.
  double pool_into_all_mib_s = 0;
};

// Puts `snapshots` snapshots of `layers` opaque layers of `layer_bytes`
// (distinct bytes per run) through a store with no local copies in
// local_dir/h, as many others in one PutSnapshots through local_dir/i and
// (no local copies) local_dir/j, then as many others through a store in local_dir/a, then restores
// each cold through a store in local_dir/b (a LongestPrefix each), then all
// of them through a store in local_dir/c (one CountLeadingStored: a batch,
// then a ReadLayersInto of each), then each into memory through a store
// in local_dir/d (a LongestPrefix and a ReadLayersInto each), then with no
// local copies through local_dir/e (the same) and local_dir/f (a
// CountLeadingStored and one ReadSnapshotsInto), then with copies and no
// lookup through local_dir/g (one ReadSnapshotsInto); checks the last one
// byte for byte.
// Empties local_dir and the URI's namespace before and after.
Result<StoreFigures> RunStoreLevel(const rados::RadosUri& uri, const std::string& local_dir,
                                   size_t snapshots, size_t layers, size_t layer_bytes, int run);

}  // namespace auxstore::bench
