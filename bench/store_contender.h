// auxstore as a benchmark contender: snapshot writes in each durability
// mode, restores cold and warm, and the lookup/open figures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "auxstore/store.h"
#include "bench/workload.h"

namespace auxstore::bench {

// The namespace and prefixes the contenders write under.
NamespaceId BenchNamespace();
Prefix BenchPrefix(uint64_t snapshot);

struct WriteResult {
  double seconds = -1;       // until every PutSnapshot returned (async: plus Flush)
  double amplification = 0;  // bytes the process wrote to disk / payload bytes
};

class StoreContender {
 public:
  explicit StoreContender(std::string dir) : dir_(std::move(dir)) {}
  // Writes the workload into a fresh store.
  WriteResult Write(const WorkloadData& data, Durability mode);
  // Reads every layer of every snapshot with Store::ReadLayer into one reused
  // buffer (checksums verified); `cold` drops the store's pages first.
  double ReadLayers(const WorkloadData& data, bool cold);
  // Reads every snapshot with one Store::ReadLayersInto of all its layers
  // into one reused buffer of a snapshot's size (the connectors' read into
  // the engine's memory).
  double ReadLayersInto(const WorkloadData& data, bool cold);

 private:
  std::string dir_;
};

struct IndexFigures {
  uint64_t manifests = 0;
  double open_ms = 0;         // Store::Open with that many snapshots stored
  double index_ready_ms = 0;  // until the background LRU index has loaded
  double longest_p50_us = 0;  // LongestPrefix over 64 candidates
  double longest_p99_us = 0;
};
// Fills a store with `manifests` small snapshots (batched), reopens it, and
// times open and LongestPrefix.
IndexFigures MeasureIndex(const std::string& dir, uint64_t manifests, uint32_t probes);

}  // namespace auxstore::bench
