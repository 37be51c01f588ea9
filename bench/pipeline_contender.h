// auxstore's full restore path as a contender: GpuPipeline on the host
// backend (read on the Asio pool straight into staging, verify, upload,
// commit), into fresh opaque sequence states. Also reports the restore's
// peak RSS growth against the staging bound.
#pragma once

#include <string>

#include "bench/workload.h"

namespace auxstore::bench {

struct PipelineRestore {
  double seconds = -1;
  uint64_t staging_bound_bytes = 0;    // staging buffers x bytes
  uint64_t peak_rss_growth_bytes = 0;  // VmHWM during restore - RSS before (targets excluded)
};

// Restores every snapshot the StoreContender wrote into `store_dir`.
PipelineRestore RestoreThroughPipeline(const std::string& store_dir, const WorkloadData& data,
                                       bool cold);

}  // namespace auxstore::bench
