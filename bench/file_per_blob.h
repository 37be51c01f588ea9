// The usual alternative most peers use for a disk tier: one file per blob,
// written to a temp name, fsync, rename (directory fsynced once per
// snapshot); read back with read().
#pragma once

#include <string>

#include "bench/workload.h"

namespace auxstore::bench {

struct FilePerBlob {
  explicit FilePerBlob(std::string dir) : dir(std::move(dir)) {}
  double Write(const WorkloadData& data);            // seconds, all snapshots durable
  double Read(const WorkloadData& data, bool cold);  // seconds, every layer into a buffer
  std::string dir;
};

}  // namespace auxstore::bench
