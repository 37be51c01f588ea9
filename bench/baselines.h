// The physical limits, measured in the same process as the contenders:
// raw sequential write + fdatasync, raw sequential read with the page cache
// dropped, single-thread memcpy, XXH3-64.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace auxstore::bench {

// Each returns seconds for `bytes.size()` bytes. `file` is created/replaced.
double RawWrite(const std::string& file, std::span<const uint8_t> bytes);
double RawReadCold(const std::string& file, uint64_t bytes);
// Every regular file under `dir` read sequentially, page cache dropped first:
// the raw read of exactly the blocks a store restore reads, at the same age.
double RawReadTreeCold(const std::string& dir);
// `dst` (src.size() bytes) is the caller's, kept across runs: freeing 256 MiB
// between measurements made the next one on this VM up to 30x slower
// (measured: an XXH3 pass right after a large free ran at 0.46 GB/s, 15 before).
double Memcpy(std::span<const uint8_t> src, std::span<uint8_t> dst);
double Xxh3(std::span<const uint8_t> src);

}  // namespace auxstore::bench
