// `auxstore_bench --instructions`: instructions per restored byte (issue
// 25), side by side in one process on the same bytes: memcpy and XXH3-64
// (the limits), Store::ReadLayerInto of warm layers (read, verify and copy
// into the caller's buffer), Store::ReadLayer with a sink that copies
// nothing (read and verify only), and the restore pipeline on the host
// backend (every thread counted).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "bench/workload.h"

namespace auxstore::bench {

// Writes `w` into a fresh store under `dir`, reads it once (warm), then
// counts each region `runs` times; the median per region. `print`: a table.
nlohmann::json CountInstructions(const std::string& dir, const Workload& w, int runs, bool print);

}  // namespace auxstore::bench
